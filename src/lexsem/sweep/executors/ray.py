"""The `ray` executor: one Ray task per job, scheduled by the resources the job declares
(`num_cpus`, `num_gpus`, `memory`), retried `max_retries` times when its worker is lost (a
node gone, a process killed: Ray's system failures; a job's own error is its `failed` status,
never retried). On an existing cluster (`address`, e.g. `ray://head:10001` or `auto`) or a
local one started here; a Ray already initialised in this process (a test's
`ray.init(num_cpus=2)`) is used as it is.

The driver needs no file system shared with the workers: a task returns its `Run` and, with
`per-job` stores, the bytes of its request store; the driver writes the run folder and keeps
the store for the merge. A worker process keeps its last `Evaluator`, so the jobs Ray gives it
on the same data load the benchmarks once.
"""

from __future__ import annotations

import os
from typing import Any

from lexsem.errors import LexsemError
from lexsem.evaluator import Evaluator
from lexsem.sweep.executors.base import Executor, SweepContext
from lexsem.sweep.executors.local import data_key
from lexsem.sweep.grid import Job
from lexsem.sweep.job_run import StoreMode, evaluate, import_plugins, job_status, save_results
from lexsem.sweep.record import JobStatus, worker_name

__all__ = ["EXECUTOR", "Ray", "connect"]

_KEPT: dict[str, Any] = {}  # in a worker process: the last Evaluator and its data key


def _evaluator(job: Job) -> Evaluator:
    key = data_key(job.config)
    if _KEPT.get("key") != key:
        _KEPT.clear()
        _KEPT.update(key=key, evaluator=Evaluator(job.config))
    return _KEPT["evaluator"]


def ray_job(job: Job, stores: StoreMode) -> dict[str, Any]:
    """The body of one Ray task (in the worker): the job's run, store files and error."""
    import_plugins(job.plugins)
    run, files, error, seconds = evaluate(job, stores, _evaluator(job))
    return {
        "run": run,
        "files": files,
        "error": error,
        "seconds": seconds,
        "worker": worker_name(),
    }


def connect(address: str | None) -> bool:
    """Connect to Ray (True when this call started it, so it shuts it down)."""
    try:
        import ray
    except ImportError:
        raise LexsemError(
            "the ray executor needs Ray: pip install 'lexsem[ray]' (or use --executor local)"
        ) from None
    if ray.is_initialized():
        return False
    env = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    ray.init(
        address=address,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": env} if env and address is None else None,
    )
    return True


class Ray(Executor):
    """One Ray task per job; each status reported as its task ends (in any order)."""

    stores = "per-job"  # the workers need no cache shared with the driver

    def run(self, jobs: list[Job], ctx: SweepContext) -> None:
        import ray

        started = connect(ctx.address)
        refs: dict[Any, Job] = {}
        try:
            task = ray.remote(ray_job)
            for job in jobs:
                res = job.resources
                options: dict[str, Any] = {
                    "num_cpus": res.num_cpus,
                    "num_gpus": res.num_gpus,
                    "max_retries": ctx.max_retries,
                    "retry_exceptions": False,
                    "name": f"lexsem-sweep:{job.id}",
                }
                if res.memory is not None:
                    options["memory"] = res.memory
                refs[task.options(**options).remote(job, ctx.stores)] = job
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1)
                for ref in ready:
                    job = refs.pop(ref)
                    ctx.report(_status(job, ref, ctx))
        except KeyboardInterrupt:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
        finally:
            if started:
                ray.shutdown()


EXECUTOR = Ray()


def _status(job: Job, ref: Any, ctx: SweepContext) -> JobStatus:
    import ray

    base = {"id": job.id, "model": job.model, "benchmarks": list(job.config.benchmarks)}
    try:
        result = ray.get(ref)
    except ray.exceptions.RayError as exc:  # the worker lost more often than max_retries
        first = " ".join(str(exc).split())[:500]
        return JobStatus(**base, status="failed", error=f"Ray: {first}", executor=ctx.executor)
    run, error = result["run"], result["error"]
    failed = save_results(ctx.out, job.id, run, result["files"])
    if failed is not None:
        run, error = None, failed
    return job_status(job, run, error, result["seconds"], worker=result["worker"],
                      executor=ctx.executor)  # fmt: skip

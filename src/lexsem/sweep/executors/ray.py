"""The `ray` executor: one Ray task per job, scheduled by the resources the job declares
(`num_cpus`, `num_gpus`, `memory`), retried `max_retries` times when its worker is lost (a
node gone, a process killed: Ray's system failures; a job's own error is its `failed` status,
never retried). On an existing cluster (`address`, e.g. `ray://head:10001` or `auto`) or a
local one started here; a Ray already initialised in this process (a test's
`ray.init(num_cpus=2)`) is used as it is.

The driver needs no file system shared with the workers: a task gets a read-only snapshot
of what the main request store holds of its model (`store_seed`, put in Ray's object store
once per model and shared by its jobs), computes only what is missing, and returns its `Run`
and, with `per-job` stores, the bytes of the store files it added to; the driver writes the
run folder and keeps the store for the merge. A fully cached job encodes nothing and returns
no store. A worker process keeps its last `Evaluator`, so the jobs Ray gives it on the same
data load the benchmarks once; a worker killed mid-job leaves its temporary store folder,
removed by the next job on that machine (and by the driver when the sweep ends).

A local Ray (no `address`, no `RAY_ADDRESS`) is one machine's: its node address is the
loopback, so every Ray port listens on 127.0.0.1 only, and the dashboard is off.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from lexsem.errors import LexsemError
from lexsem.evaluator import Evaluator
from lexsem.sweep.executors.base import Executor, SweepContext
from lexsem.sweep.executors.local import data_key
from lexsem.sweep.grid import Job
from lexsem.sweep.job_run import (
    StoreMode,
    evaluate,
    import_plugins,
    job_status,
    remove_stale_stores,
    save_results,
    store_seed,
)
from lexsem.sweep.record import JobStatus, worker_name
from lexsem.sweep.spread import run_spread_job

__all__ = ["EXECUTOR", "Ray", "connect"]

_KEPT: dict[str, Any] = {}  # in a worker process: the last Evaluator and its data key


def _evaluator(job: Job) -> Evaluator:
    key = data_key(job.config)
    if _KEPT.get("key") != key:
        _KEPT.clear()
        _KEPT.update(key=key, evaluator=Evaluator(job.config))
    return _KEPT["evaluator"]


def ray_job(job: Job, stores: StoreMode, seed: dict[str, bytes] | None = None) -> dict[str, Any]:
    """The body of one Ray task (in the worker): the job's run, the store files it added to,
    its error. `seed`: what its per-job store starts from (`store_seed`)."""
    import_plugins(job.plugins)
    run, files, error, seconds = evaluate(job, stores, _evaluator(job), seed=seed)
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
    local = address is None and not os.environ.get("RAY_ADDRESS")
    with _loopback() if local else contextlib.nullcontext():
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": env} if env and address is None else None,
            **({"_node_ip_address": LOOPBACK} if local else {}),
        )
    return True


LOOPBACK = "127.0.0.1"
# Ray resolves a loopback node address to the machine's network address unless its
# one-machine mode is on (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read when Ray is imported)
_ONE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def _loopback() -> Iterator[None]:
    """Ray's one-machine mode while a local Ray starts: its processes bind to the loopback."""
    from ray._private import ray_constants

    saved_env, saved = os.environ.get(_ONE_MACHINE), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_ONE_MACHINE] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
        if saved_env is None:
            os.environ.pop(_ONE_MACHINE, None)
        else:
            os.environ[_ONE_MACHINE] = saved_env


class Ray(Executor):
    """One Ray task per job; each status reported as its task ends (in any order). A job of
    `resources.spread` > 1 runs first, in the driver, its encoding spread over that many
    actors (`lexsem.sweep.spread`), the spread jobs one after another."""

    stores = "per-job"  # the workers need no cache shared with the driver
    spreads = True

    def run(self, jobs: list[Job], ctx: SweepContext) -> None:
        import ray

        started = connect(ctx.address)
        refs: dict[Any, Job] = {}
        seeds: dict[tuple[object, ...], Any] = {}  # one snapshot per model and cache
        try:
            for job in [job for job in jobs if job.resources.spread > 1]:
                ctx.report(
                    run_spread_job(
                        job, ctx.out, spread=job.resources.spread, max_retries=ctx.max_retries,
                        rank=ctx.rank, executor=ctx.executor, echo=ctx.echo,
                    )
                )  # fmt: skip
            task = ray.remote(ray_job)
            for job in [job for job in jobs if job.resources.spread == 1]:
                cfg = job.config
                seed_key = (job.model, cfg.cache_dir, cfg.device, cfg.dtype, cfg.offline)
                if ctx.stores == "per-job" and seed_key not in seeds:
                    seed = store_seed(job)
                    seeds[seed_key] = ray.put(seed) if seed else None
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
                ref = task.options(**options).remote(job, ctx.stores, seeds.get(seed_key))
                refs[ref] = job
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
            remove_stale_stores()  # of workers killed on this machine


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

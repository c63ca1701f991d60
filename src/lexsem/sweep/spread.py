"""Spread one job's encoding over Ray actors, with the results of one process: the `ray`
executor's spread jobs (`Executor.spreads`).

For a job whose `resources.spread` is N > 1 (or `lexsem sweep --spread N`), the process that
runs the sweep plans the job's requests with the Evaluator's own planning (`Evaluator.plan`)
and hands them to the engine's public step for spreading (`lexsem.engine.units.Encoding`),
which finds what the model's request store already holds and cuts the rest into units of
whole batches, the batches one process makes. N actors (`SpreadWorker`), each with the job's
resources and the model loaded once, compute the units (`lexsem.engine.units.UnitEncoder`);
each result is written to the main request store (`Encoding.fill`) as it arrives. Then
`Evaluator(config).run(model)` finds every embedding stored and encodes nothing (checked: a
job whose run encodes anything fails). Every encoder call sees the batch it sees in one
process, so the vectors agree with one process's within the fp32 tolerance (docs/testing.md).

An actor lost mid-unit (a node gone, a process killed) is restarted and its unit retried, up to
`max_retries` times. Where the spread will not pay (`spread_advice`: CPU actors that need more
cores than the Ray cluster has, or under two batches per actor), a warning says so as the
actors start.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.config import EvalConfig
from lexsem.engine.units import Encoding, Unit, UnitEncoder
from lexsem.errors import LexsemError
from lexsem.evaluator import Evaluator
from lexsem.models.protocols import fingerprint_key
from lexsem.paths import cache_dir as default_cache_dir
from lexsem.sweep.grid import Job, Resources
from lexsem.sweep.job_run import evaluate, import_plugins, job_status, one_line, save_results
from lexsem.sweep.record import JobStatus, worker_name

__all__ = ["IN_FLIGHT", "SpreadStats", "SpreadWorker", "run_spread_job", "spread_advice",
           "spread_encode"]  # fmt: skip

IN_FLIGHT = 2  # units queued per actor: the next is ready when one ends


@dataclass
class SpreadStats:
    """What a spread encoding did."""

    workers: int
    units: int = 0
    n_texts_encoded: int = 0
    n_images_encoded: int = 0
    n_images_failed: int = 0  # left to the job's run (raised or skipped there)
    n_texts_missing: int = 0  # what the store lacked when the units were planned
    n_images_missing: int = 0
    seconds: float = 0.0


class SpreadWorker:
    """A Ray actor: loads the model `spec` once and computes units (`UnitEncoder`); it never
    writes a store (the driver does)."""

    def __init__(
        self, spec: str, *, device: str | None, dtype: str | None, offline: bool,
        plugins: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        from lexsem.models.factory import load_model

        import_plugins(plugins)
        self.model = load_model(spec, device=device, dtype=dtype, offline=offline)
        self.compute = UnitEncoder(self.model)

    def fingerprint_key(self) -> str:
        """The key of the model's fingerprint here (the driver checks it is its own)."""
        return fingerprint_key(self.model.fingerprint)

    def unit(self, shared: tuple[Any, ...], part: range | None) -> Any:
        return self.compute(shared, part)


class _Pool:
    """`workers` actors of `SpreadWorker`, restarted when lost; units run `IN_FLIGHT` per
    actor, results handled in the order they end."""

    def __init__(
        self, spec: str, config: EvalConfig, workers: int, resources: Resources,
        plugins: tuple[str, ...], max_retries: int,
    ) -> None:  # fmt: skip
        import ray

        options: dict[str, Any] = {
            "num_cpus": resources.num_cpus,
            "num_gpus": resources.num_gpus,
            "max_restarts": max_retries,
            "max_task_retries": max_retries,
        }
        if resources.memory is not None:
            options["memory"] = resources.memory
        actor = ray.remote(SpreadWorker).options(**options)
        kw = {"device": config.device, "dtype": config.dtype, "offline": config.offline}
        self.actors = [actor.remote(spec, plugins=plugins, **kw) for _ in range(workers)]

    def check(self, key: str) -> None:
        """Every actor's model has the fingerprint `key` (the driver's)."""
        import ray

        for got in _get(ray.get, [a.fingerprint_key.remote() for a in self.actors]):
            if got != key:
                raise LexsemError(
                    "a spread worker's model is not the driver's (another fingerprint): "
                    "give every node the same weights and lexsem"
                )

    def run(self, units: Iterable[Unit], fill: Callable[[Unit, Any], bool]) -> int:
        """Run `units`; the number run. `fill` returning False stops new units."""
        import ray

        todo: Iterator[Unit] = iter(units)
        running: dict[Any, tuple[Any, Unit]] = {}
        load = {id(a): 0 for a in self.actors}
        n, stop, shared = 0, False, (None, None)  # the last unit's shared part, put once
        try:
            while True:
                while not stop:
                    actor = min(self.actors, key=lambda a: load[id(a)])
                    if load[id(actor)] >= IN_FLIGHT:
                        break
                    unit = next(todo, None)
                    if unit is None:
                        stop = True
                        break
                    if shared[0] is not unit.shared:
                        shared = (unit.shared, ray.put(unit.shared))
                    running[actor.unit.remote(shared[1], unit.part)] = (actor, unit)
                    load[id(actor)] += 1
                if not running:
                    return n
                (ref,), _ = ray.wait(list(running), num_returns=1)
                actor, unit = running.pop(ref)
                load[id(actor)] -= 1
                n += 1
                if not fill(unit, _get(ray.get, ref)):
                    stop = True
        finally:
            for ref in running:
                ray.cancel(ref, force=False)

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a, no_restart=True)


def _get(get: Callable[[Any], Any], refs: Any) -> Any:
    """`ray.get(refs)`, an actor lost more often than it may be restarted as a LexsemError."""
    import ray

    try:
        return get(refs)
    except ray.exceptions.RayActorError as exc:
        first = " ".join(str(exc).split())[:300]
        raise LexsemError(f"a spread worker was lost more often than retried: {first}") from None


def spread_encode(
    config: EvalConfig,
    model: str,
    *,
    workers: int,
    resources: Resources | None = None,
    plugins: tuple[str, ...] = (),
    max_retries: int = 3,
    evaluator: Evaluator | None = None,
) -> SpreadStats:
    """Encode what `model`'s request store lacks of the run `Evaluator(config).run(model)`
    (its text and image embeddings) on `workers` Ray actors (Ray connected already), into the
    main store of `config.cache_dir`. `evaluator`: one of `config` whose data is loaded."""
    if not config.use_cache:
        raise LexsemError("a spread encoding needs the request store (use_cache = true)")
    t0 = time.perf_counter()
    ev = evaluator or Evaluator(config)
    planned = ev.plan(model)
    enc = Encoding(
        planned.model, planned.caps, planned.plan, default_cache_dir(config.cache_dir),
        batch_size=config.batch_size, workers=workers, images=ev.image_store,
        skip_bad_images=config.skip_bad_images, num_workers=config.num_workers,
        exif_transpose=config.exif_transpose,
    )  # fmt: skip
    res = resources or Resources()
    units, pool, n = enc.units(), None, 0
    try:
        first = next(units, None)  # the pool starts only when there is a unit
        if first is not None:
            _advise(enc.n_texts_missing + enc.n_images_missing, config, workers, res)
            pool = _Pool(model, config, workers, res, plugins, max_retries)
            pool.check(enc.key)
            n = pool.run(_chain(first, units), enc.fill)
    finally:
        enc.close()
        if pool is not None:
            pool.close()
    return SpreadStats(
        workers=workers, units=n, n_texts_encoded=enc.n_texts_encoded,
        n_images_encoded=enc.n_images_encoded, n_images_failed=enc.n_images_failed,
        n_texts_missing=enc.n_texts_missing, n_images_missing=enc.n_images_missing,
        seconds=time.perf_counter() - t0,
    )  # fmt: skip


def _chain(first: Unit, rest: Iterator[Unit]) -> Iterator[Unit]:
    yield first
    yield from rest


def _advise(n_missing: int, config: EvalConfig, workers: int, res: Resources) -> None:
    """A warning where the spread will not pay (`spread_advice`), as the actors start."""
    import ray

    why = spread_advice(
        n_missing, batch_size=config.batch_size, workers=workers, cpus_per_actor=res.num_cpus,
        gpus_per_actor=res.num_gpus, cluster_cpus=float(ray.cluster_resources().get("CPU", 0.0)),
    )  # fmt: skip
    if why is not None:
        warnings.warn(f"spread encoding will not pay here: {why}", RuntimeWarning, stacklevel=2)


def spread_advice(
    n_missing: int, *, batch_size: int, workers: int, cpus_per_actor: float, gpus_per_actor: float,
    cluster_cpus: float,
) -> str | None:  # fmt: skip
    """Why spreading a job's encoding will not pay, or None where it may. The rule:

    - CPU actors that, with the driver, need more cores than the cluster has
      (`workers` × `cpus_per_actor` + 1 > `cluster_cpus`) share them: each gets a slice of what
      one process uses whole, and loads a model of its own (docs/scale.md has measurements);
    - a job with fewer than two batches per actor to encode spends more on the actors'
      start-up (each loads the model) than it saves.
    """
    n_batches = math.ceil(n_missing / batch_size) if batch_size > 0 else 0
    if gpus_per_actor == 0 and workers * max(cpus_per_actor, 1) + 1 > cluster_cpus:
        return (
            f"spreading over {workers} actors of {cpus_per_actor:g} CPU each needs "
            f"{workers * max(cpus_per_actor, 1) + 1:g} cores with the driver; the Ray cluster "
            f"has {cluster_cpus:g}: they share them; expect no speed-up over one process "
            "(--spread 1) unless other work loads the cores"
        )
    if n_batches < 2 * workers:
        return (
            f"only {n_missing} to encode ({n_batches} batches of {batch_size}) over {workers} "
            "actors: each loads the model for under two batches; one process (--spread 1) is "
            f"faster below {2 * workers * batch_size}"
        )
    return None


def run_spread_job(
    job: Job,
    out: Path,
    *,
    spread: int,
    max_retries: int = 3,
    evaluator: Evaluator | None = None,
    rank: int | None = None,
    executor: str = "local",
    echo: Callable[[str], None] = lambda text: None,
) -> JobStatus:
    """`job` with its encoding spread over `spread` actors (Ray connected already), then its
    run here, through the main store, into `OUT/runs/<id>/`."""
    t0 = time.perf_counter()
    base = {"id": job.id, "model": job.model, "benchmarks": list(job.config.benchmarks)}
    ev = evaluator if evaluator is not None and evaluator.config == job.config else None
    try:
        ev = ev or Evaluator(job.config)
        st = spread_encode(
            job.config, job.model, workers=spread, resources=job.resources,
            plugins=job.plugins, max_retries=max_retries, evaluator=ev,
        )  # fmt: skip
        echo(
            f"spread {job.id}: {st.n_texts_encoded} texts, {st.n_images_encoded} images "
            f"encoded by {spread} workers in {st.units} units ({st.seconds:.1f} s)"
        )
    except Exception as exc:  # the job's failure, reported; the sweep goes on
        return JobStatus(
            **base, status="failed", error=one_line(exc), executor=executor,
            seconds=round(time.perf_counter() - t0, 3), worker=worker_name(rank),
        )  # fmt: skip
    run, _, error, _ = evaluate(job, "shared", ev)
    if run is not None:
        t = run.record.timings
        left = {"texts": t.n_texts_encoded, "images": t.n_images_encoded}
        if any(left.values()):
            run, error = (
                None,
                (
                    "the spread encoding left "
                    + ", ".join(f"{n} {what}" for what, n in left.items() if n)
                    + " to encode in one process"
                ),
            )
    failed = save_results(out, job.id, run)
    if failed is not None:
        run, error = None, failed
    return job_status(job, run, error, time.perf_counter() - t0, worker=worker_name(rank),
                      executor=executor)  # fmt: skip

"""Spread one job's encoding over Ray actors, with the results of one process.

For a job whose `resources.spread` is N > 1 (or `lexsem sweep --spread N`), the process that
runs the sweep plans the job's unique requests with the Evaluator's own planning
(`Evaluator.plan`), finds what the model's request store already holds, and splits the rest
into units of whole batches, the batches one process makes (`lexsem.sweep.spread_plan`).
N actors (`lexsem.sweep.spread_worker`), each with the job's resources and the model loaded
once, encode the units; each result is written to the main request store under the keys one
process uses, as it arrives. Then `Evaluator(config).run(model)` finds every embedding stored
and encodes nothing (checked: a job whose run encodes anything fails). Every encoder call sees
the batch it sees in one process, so the vectors, the per-item results and the run record
(but its timings) are those of one process.

What is spread: the text embeddings of a text encoder and the image (and caption) embeddings
of a dual encoder. Other requests (pair scorers, blind scorers, chat models) are made by the
job's own run, in one process. An actor lost mid-unit (a node gone, a process killed) is
restarted and its unit retried, up to `max_retries` times. An image that cannot be read or
decoded is left to the job's run, which raises or skips it as in one process. Where the spread
will not pay (`lexsem.sweep.spread_plan.spread_advice`: CPU actors that need more cores than
the Ray cluster has, or under two batches per actor), a warning says so as the actors start.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.config import EvalConfig
from lexsem.engine.image_scan import pixel_limit, scan_for
from lexsem.engine.keys import content_key
from lexsem.engine.request_store import RequestStore
from lexsem.engine.runner import CHAT_SCORES, IMAGE, PAIR, SCORER, TEXT
from lexsem.errors import LexsemError, ModelError
from lexsem.evaluator import Evaluator, Planned
from lexsem.images.refs import ImageError, ResolvedImage
from lexsem.models.protocols import fingerprint_key
from lexsem.paths import cache_dir as default_cache_dir
from lexsem.sweep.grid import Job, Resources
from lexsem.sweep.job_run import evaluate, job_status, one_line, save_results
from lexsem.sweep.record import JobStatus, worker_name
from lexsem.sweep.spread_plan import image_units, spread_advice, text_chunks
from lexsem.sweep.spread_worker import SpreadWorker, Unreadable

__all__ = ["IN_FLIGHT", "SpreadStats", "run_spread_job", "spread_encode"]

IN_FLIGHT = 2  # units queued per actor: the next is ready when one ends

# a unit: how to start it on an actor, and what to do with its result (False: stop)
Unit = tuple[Callable[[Any], Any], Callable[[Any], bool]]


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
        self.actors = [
            actor.remote(
                spec,
                device=config.device,
                dtype=config.dtype,
                offline=config.offline,
                plugins=plugins,
            )
            for _ in range(workers)
        ]

    def check(self, key: str) -> None:
        """Every actor's model has the fingerprint `key` (the driver's)."""
        import ray

        for got in _get(ray.get, [a.fingerprint_key.remote() for a in self.actors]):
            if got != key:
                raise LexsemError(
                    "a spread worker's model is not the driver's (another fingerprint): "
                    "give every node the same weights and lexsem"
                )

    def run(self, units: Iterable[Unit]) -> int:
        """Run `units`; the number run. A handler returning False stops new units."""
        import ray

        todo: Iterator[Unit] = iter(units)
        running: dict[Any, tuple[Any, Callable[[Any], bool]]] = {}
        load = {id(a): 0 for a in self.actors}
        n, stop = 0, False
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
                    start, handle = unit
                    running[start(actor)] = (actor, handle)
                    load[id(actor)] += 1
                if not running:
                    return n
                (ref,), _ = ray.wait(list(running), num_returns=1)
                actor, handle = running.pop(ref)
                load[id(actor)] -= 1
                n += 1
                if not handle(_get(ray.get, ref)):
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
    stats = SpreadStats(workers=workers)
    caps = planned.caps
    do_texts = TEXT in caps and SCORER not in caps and bool(planned.plan.texts)
    do_images = IMAGE in caps and not caps & {PAIR, CHAT_SCORES} and bool(planned.plan.pairs)
    if not (do_texts or do_images):
        return stats
    key = fingerprint_key(planned.model.fingerprint)
    store = RequestStore(default_cache_dir(config.cache_dir), key)
    pool: _Pool | None = None

    res = resources or Resources()

    def started() -> _Pool:
        nonlocal pool
        if pool is None:
            _advise(stats, config, workers, res)
            pool = _Pool(model, config, workers, res, plugins, max_retries)
            pool.check(key)
        return pool

    try:
        dim: list[int] = []
        if do_texts:
            units = _text_units(planned, store, config, workers, stats, dim)
            stats.units += _run_lazily(started, units)
        if do_images:
            units = _image_units(ev, planned, store, config, workers, stats, dim)
            stats.units += _run_lazily(started, units)
    finally:
        store.close()
        if pool is not None:
            pool.close()
    stats.seconds = time.perf_counter() - t0
    return stats


def _advise(stats: SpreadStats, config: EvalConfig, workers: int, res: Resources) -> None:
    """A warning where the spread will not pay (`spread_advice`), as the actors start."""
    import ray

    why = spread_advice(
        stats.n_texts_missing + stats.n_images_missing, batch_size=config.batch_size,
        workers=workers, cpus_per_actor=res.num_cpus, gpus_per_actor=res.num_gpus,
        cluster_cpus=float(ray.cluster_resources().get("CPU", 0.0)),
    )  # fmt: skip
    if why is not None:
        warnings.warn(f"spread encoding will not pay here: {why}", RuntimeWarning, stacklevel=2)


def _run_lazily(pool: Callable[[], _Pool], units: Iterator[Unit]) -> int:
    """Run `units` on the pool, started only when there is a first unit."""
    first = next(units, None)
    if first is None:
        return 0
    return pool().run(_chain(first, units))


def _chain(first: Unit, rest: Iterator[Unit]) -> Iterator[Unit]:
    yield first
    yield from rest


def _same_dim(dim: list[int], vecs: np.ndarray, model: str) -> None:
    """Every vector of the store has one dimension (the first seen, or the store's)."""
    if not dim:
        dim.append(int(vecs.shape[1]))
    elif vecs.shape[1] != dim[0]:
        raise ModelError(
            f"encoder {model!r} returned dimension {vecs.shape[1]}, expected {dim[0]} "
            "(from the store or earlier batches)"
        )


def _text_units(
    planned: Planned, store: RequestStore, config: EvalConfig, workers: int,
    stats: SpreadStats, dim: list[int],
) -> Iterator[Unit]:  # fmt: skip
    import ray

    texts = planned.plan.texts
    keys = [content_key("text", t) for t in texts]
    found = store.get_vectors(keys)
    if found:
        dim.append(len(next(iter(found.values()))))
    n, chunks = text_chunks(texts, keys, found, batch_size=config.batch_size, workers=workers)
    stats.n_texts_missing += n
    del found
    name, bs = planned.spec, config.batch_size
    for chunk in chunks:
        ref = ray.put(chunk.texts)

        def handle(result: Any, chunk_keys: list[str] = chunk.keys) -> bool:
            for idx, vecs in result:
                _same_dim(dim, vecs, name)
                store.put_vectors([chunk_keys[i] for i in idx], vecs)
                stats.n_texts_encoded += len(idx)
            return True

        for r in chunk.units:
            yield (
                lambda a, i=chunk.index, ref=ref, r=r: a.texts.remote(i, ref, r, bs),
                handle,
            )


def _bytes_of(src: ResolvedImage) -> ResolvedImage | Unreadable:
    """The image `src` with its bytes (the workers need no file system of the driver's), or
    the failure reading it."""
    try:
        return ResolvedImage(src.ref, data=src.read())
    except ImageError as exc:
        return Unreadable(src.ref, exc.reason, exc.detail)


def _image_units(
    ev: Evaluator, planned: Planned, store: RequestStore, config: EvalConfig, workers: int,
    stats: SpreadStats, dim: list[int],
) -> Iterator[Unit]:  # fmt: skip
    images = ev.image_store()
    plan, bs = planned.plan, config.batch_size
    on_error = "skip" if config.skip_bad_images else "raise"
    n_workers = 0 if config.num_workers is None else config.num_workers
    failed: list[bool] = []
    limit = pixel_limit(images)

    def handle(result: Any) -> bool:
        for keys, vecs, failures in result:
            if vecs is not None:
                _same_dim(dim, vecs, planned.spec)
                store.put_vectors(keys, vecs)
                stats.n_images_encoded += len(keys)
            stats.n_images_failed += len(failures)
            if failures and (on_error == "raise" or any(r == "preprocess" for _, r, _ in failures)):
                failed.append(True)  # the job's run raises it, as one process does
        return not failed

    for profile, pairs in plan.pairs.items():
        refs = list(dict.fromkeys(r for r, _ in pairs))
        scan = scan_for(
            planned.model, refs, images, store, on_error=on_error, labels=plan.labels,
            exif_transpose=config.exif_transpose, profiles=profile, batch_size=bs,
        )  # fmt: skip
        keys = list(scan.source_of)
        found = store.get_vectors(keys)
        if found and not dim:
            dim.append(len(next(iter(found.values()))))
        missing = [k for k in keys if k not in found]
        stats.n_images_missing += len(missing)
        del found
        for unit in image_units(missing, batch_size=bs, workers=workers):
            if failed:
                return
            entries = [(k, _bytes_of(scan.source_of[k])) for k in unit.keys]
            profiles = {k: scan.profile_of[k] for k in unit.keys if k in scan.profile_of}
            yield (
                lambda a, e=entries, p=profiles: a.images.remote(e, p, limit, bs, n_workers),
                handle,
            )


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

"""One job of a sweep: already done?, run it, keep its request store.

A job is done when its run folder holds a run of the same settings (`EvalConfig`, leaving out
`EXECUTION_FIELDS`) and of the same model (its fingerprint, which needs no weights: a changed
checkpoint is not done). A job runs as `Evaluator.run(model, out=runs/<id>)`; any error is its
status `failed` with the error in one line, never an exception that stops the other jobs
(Ctrl-C and a killed process do stop the sweep: the next run resumes).

Request stores (`stores`):
- `shared`: the job uses its config's cache folder as it is: one store that every process of
  one machine may write at once (SQLite's locks; not over a network file system).
- `per-job`: the job writes a store in a folder of its own on the worker's local disk; its
  files are kept in `OUT/stores/<id>/` (or sent back to Ray's driver) and merged into the
  main store (`RequestStore.merge`): what a cluster without a shared cache needs. The store
  starts as a read-only snapshot of what the main store knows of the job (`store_seed`: the
  store of the job's model and that of the bootstrap intervals, shipped with the job), so a
  worker computes only what is missing; a store file the job added nothing to is not sent
  back (a fully cached job returns no store at all).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from lexsem import plugins
from lexsem.atomic import atomic_path
from lexsem.config import EvalConfig
from lexsem.engine.request_store import RequestStore, store_files, store_keys, store_snapshot
from lexsem.errors import LexsemError
from lexsem.evaluator import Evaluator
from lexsem.results.folder_swap import ITEMS_PARQUET, RUN_JSON
from lexsem.results.redact import shareable_data
from lexsem.results.run import Run
from lexsem.results.run_folder import load_run
from lexsem.sweep.grid import EXECUTION_FIELDS, Job
from lexsem.sweep.record import JobStatus, run_dir

__all__ = [
    "StoreMode",
    "done_run",
    "evaluate",
    "import_plugins",
    "keep_store",
    "one_line",
    "remove_stale_stores",
    "run_job",
    "store_seed",
]

StoreMode = Literal["shared", "per-job"]


def import_plugins(modules: tuple[str, ...] | list[str]) -> None:
    """Load a grid's plugins (`lexsem.plugins.load`: modules or `.py` paths that register
    backends, benchmarks, executors, ...); one that fails is a `LexsemError` naming it."""
    plugins.load(modules, "grid plugins")


def _settings(config: EvalConfig | dict[str, Any]) -> Any:
    dump = config if isinstance(config, dict) else config.model_dump(mode="json")
    kept = {k: v for k, v in dump.items() if k not in EXECUTION_FIELDS}
    return json.loads(json.dumps(shareable_data(kept)))


def _raw_fingerprint(job: Job) -> dict[str, Any] | None:
    """The fingerprint of the job's model (built lazily: no weights); None where it cannot be
    built here (running the job says why)."""
    from lexsem.models.factory import load_model

    cfg = job.config
    try:
        model = load_model(job.model, device=cfg.device, dtype=cfg.dtype, offline=cfg.offline)
        return dict(model.fingerprint)
    except Exception:  # a model that cannot be built now is not done: running it says why
        return None


def _model_fingerprint(job: Job) -> dict[str, Any] | None:
    fingerprint = _raw_fingerprint(job)
    if fingerprint is None:
        return None
    return json.loads(json.dumps(shareable_data(fingerprint), default=str))


def store_seed(job: Job) -> dict[str, bytes]:
    """What a `per-job` store starts from: read-only snapshots of the main store's files of
    the job's model and of the bootstrap intervals (`<model key>.sqlite` -> bytes). Empty
    where the job keeps no store, its model cannot be built here or nothing is stored."""
    from lexsem.evaluator import CI_STORE
    from lexsem.models.protocols import fingerprint_key
    from lexsem.paths import cache_dir as default_cache_dir

    if not job.config.use_cache:
        return {}
    fingerprint = _raw_fingerprint(job)
    if fingerprint is None:
        return {}
    root = default_cache_dir(job.config.cache_dir)
    seed = {}
    for key in (fingerprint_key(fingerprint), CI_STORE):
        try:
            data = store_snapshot(root, key)
        except LexsemError:  # a damaged main store: the job computes without it
            continue
        if data:
            seed[f"{key}.sqlite"] = data
    return seed


def done_run(job: Job, out: Path) -> str | None:
    """The run id held by the run folder of `job` in `out` when it is the job's run (same
    settings, same model fingerprint); None when the job is still to run."""
    folder = run_dir(out, job.id)
    if not (folder / RUN_JSON).is_file() or not (folder / ITEMS_PARQUET).is_file():
        return None
    try:
        record = load_run(folder)
    except LexsemError:
        return None
    if _settings(record.config.evaluation) != _settings(job.config):
        return None
    fingerprint = _model_fingerprint(job)
    if fingerprint is None:
        return None
    recorded = record.model.fingerprint
    same = all(recorded.get(k) == v for k, v in fingerprint.items())
    return record.run_id if same else None


TMP_PREFIX = "lexsem-job-"  # the per-job store folders in the temporary folder: <prefix><pid>-


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_stale_stores(tmp_root: str | Path | None = None) -> list[Path]:
    """Remove the per-job store folders in the temporary folder whose process is gone (a
    killed worker's: its `finally` never ran); the folders removed."""
    root = Path(tmp_root or tempfile.gettempdir())
    removed = []
    for folder in root.glob(f"{TMP_PREFIX}*"):
        pid = folder.name.removeprefix(TMP_PREFIX).split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextlib.contextmanager
def job_config(
    job: Job, stores: StoreMode, seed: dict[str, bytes] | None = None
) -> Iterator[tuple[EvalConfig, Path | None]]:
    """The job's config, and with `per-job` stores a cache folder of its own on local disk
    (removed afterwards, also when the job fails) as its `cache_dir`, holding `seed`."""
    if stores == "shared":
        yield job.config, None
        return
    remove_stale_stores()
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-{job.id[:40]}-"))
    try:
        if seed:
            (tmp / "embeddings").mkdir()
            for name, data in seed.items():
                (tmp / "embeddings" / name).write_bytes(data)
        yield job.config.model_copy(update={"cache_dir": tmp}), tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _counts(root: Path) -> dict[str, int]:
    """model key -> the values stored under the cache root `root`."""
    out = {}
    for key in store_keys(root):
        with RequestStore(root, key, readonly=True) as store:
            out[key] = store.count()
    return out


def _added(root: Path, before: dict[str, int]) -> dict[str, bytes]:
    """The store files under `root` that hold other values than `before` counted (a seed's
    file the job added nothing to is left out)."""
    files = store_files(root)
    after = _counts(root)
    return {
        name: data
        for name, data in files.items()
        if after.get(name.removesuffix(".sqlite")) != before.get(name.removesuffix(".sqlite"))
    }


def keep_store(out: Path, job_id: str, files: dict[str, bytes]) -> None:
    """Keep a job's store files in `OUT/stores/<id>/embeddings/` until they are merged."""
    folder = out / "stores" / job_id / "embeddings"
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        with atomic_path(folder / name) as tmp:
            Path(tmp).write_bytes(data)


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, LexsemError) else f"{type(exc).__name__}: {text}"


def evaluate(
    job: Job,
    stores: StoreMode,
    evaluator: Evaluator | None = None,
    save: Path | None = None,
    seed: dict[str, bytes] | None = None,
) -> tuple[Run | None, dict[str, bytes], str | None, float]:
    """Run `job` (with `evaluator` when given: its data stays loaded); (the run or None, the
    store files a per-job store gained, the error or None, seconds). With `save`, the run
    folder is written there; `seed`: what a per-job store starts from (`store_seed`)."""
    t0 = time.perf_counter()
    with job_config(job, stores, seed) as (config, tmp):
        before = _counts(tmp) if tmp is not None else {}
        try:
            if evaluator is None:
                ev = Evaluator(config)
            elif evaluator.config == config:
                ev = evaluator
            else:
                ev = evaluator.derive(**config.model_dump())
            run = ev.run(job.model, out=save, force=True)
            error = None
        except Exception as exc:  # the job's failure, reported; the sweep goes on
            run, error = None, one_line(exc)
        files = _added(tmp, before) if tmp is not None else {}
    return run, files, error, time.perf_counter() - t0


def run_job(
    job: Job,
    out: Path,
    *,
    stores: StoreMode = "shared",
    evaluator: Evaluator | None = None,
    worker: str | None = None,
    executor: str | None = None,
) -> JobStatus:
    """Run `job` into `OUT/runs/<id>/` (its per-job store, seeded from the main store, kept
    in `OUT/stores/<id>/`)."""
    seed = store_seed(job) if stores == "per-job" else None
    run, files, error, seconds = evaluate(
        job, stores, evaluator, save=run_dir(out, job.id), seed=seed
    )
    if files:
        keep_store(out, job.id, files)
    return job_status(job, run, error, seconds, worker=worker, executor=executor)


def job_status(
    job: Job, run: Run | None, error: str | None, seconds: float, *, worker: str | None,
    executor: str | None,
) -> JobStatus:  # fmt: skip
    """The status of a job that ran: done with its run's id, or failed with `error`."""
    return JobStatus(
        id=job.id,
        model=job.model,
        benchmarks=list(job.config.benchmarks),
        status="failed" if run is None else "done",
        error=error,
        run_id=run.record.run_id if run is not None else None,
        seconds=round(seconds, 3),
        worker=worker,
        executor=executor,
    )


def save_results(
    out: Path, job_id: str, run: Run | None, files: dict[str, bytes] | None = None
) -> str | None:
    """Keep a job's store `files` in `OUT/stores/<id>/` and write its run (where it has one)
    into `OUT/runs/<id>/`; the error of a failed write in one line, else None."""
    try:
        if files:
            keep_store(out, job_id, files)
        if run is not None:
            run.save(run_dir(out, job_id), force=True)
    except (OSError, LexsemError) as exc:
        return f"writing its results: {' '.join(str(exc).split())}"
    return None

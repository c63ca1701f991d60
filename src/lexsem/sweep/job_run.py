"""One job of a sweep: already done?, run it, keep its request store.

A job is done when its run folder holds a run of the same settings (`EvalConfig`, leaving out
`EXECUTION_FIELDS`) and of the same model (its fingerprint, which needs no weights: a changed
checkpoint is not done). A job runs as `Evaluator.run(model, out=runs/<id>)`; any error is its
status `failed` with the error in one line, never an exception that stops the other jobs
(Ctrl-C and a killed process do stop the sweep: the next run resumes).

Request stores (`stores`):
- `shared`: the job uses its config's cache folder as it is: one store that every process of
  one machine may write at once (SQLite's locks; not over a network file system).
- `per-job`: the job writes a fresh store in a folder of its own on the worker's local disk;
  its files are kept in `OUT/stores/<id>/` (or sent back to Ray's driver) and merged into the
  main store (`RequestStore.merge`): what a cluster without a shared cache needs.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from lexsem.atomic import atomic_path
from lexsem.config import EvalConfig
from lexsem.engine.request_store import store_files
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
    "run_job",
]

StoreMode = Literal["shared", "per-job"]


def import_plugins(modules: tuple[str, ...] | list[str]) -> None:
    """Import a grid's plugins (modules that register backends or benchmarks)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise LexsemError(f"grid plugin {name!r} cannot be imported: {exc}") from None


def _settings(config: EvalConfig | dict[str, Any]) -> Any:
    dump = config if isinstance(config, dict) else config.model_dump(mode="json")
    kept = {k: v for k, v in dump.items() if k not in EXECUTION_FIELDS}
    return json.loads(json.dumps(shareable_data(kept)))


def _model_fingerprint(job: Job) -> dict[str, Any] | None:
    from lexsem.models.factory import load_model

    cfg = job.config
    try:
        model = load_model(job.model, device=cfg.device, dtype=cfg.dtype, offline=cfg.offline)
        return json.loads(json.dumps(shareable_data(model.fingerprint), default=str))
    except Exception:  # a model that cannot be built now is not done: running it says why
        return None


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


@contextlib.contextmanager
def job_config(job: Job, stores: StoreMode) -> Iterator[tuple[EvalConfig, Path | None]]:
    """The job's config, and with `per-job` stores a fresh cache folder of its own on local
    disk (removed afterwards) as its `cache_dir`."""
    if stores == "shared":
        yield job.config, None
        return
    tmp = Path(tempfile.mkdtemp(prefix=f"lexsem-{job.id[:40]}-"))
    try:
        yield job.config.model_copy(update={"cache_dir": tmp}), tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    job: Job, stores: StoreMode, evaluator: Evaluator | None = None, save: Path | None = None
) -> tuple[Run | None, dict[str, bytes], str | None, float]:
    """Run `job` (with `evaluator` when given: its data stays loaded); (the run or None, the
    store files of a per-job store, the error or None, seconds). With `save`, the run folder
    is written there."""
    t0 = time.perf_counter()
    with job_config(job, stores) as (config, tmp):
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
        files = store_files(tmp) if tmp is not None else {}
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
    """Run `job` into `OUT/runs/<id>/` (its per-job store kept in `OUT/stores/<id>/`)."""
    run, files, error, seconds = evaluate(job, stores, evaluator, save=run_dir(out, job.id))
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

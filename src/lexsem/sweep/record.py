"""What a sweep folder says of its jobs: one status file per job, and `sweep.json` over them.

    OUT/
      sweep.json            the summary: the grid, each job's status, the stores merged
      jobs/<job id>.json    one job's status, written by whichever process ran it
      runs/<job id>/        the job's run folder (run.json, items.parquet)
      stores/<job id>/      a job's own request store, until merged into the main store

Each process writes only the status files of its own jobs (atomically), so shards and Ray's
driver never write one file at once. `sweep.json` is updated under a lock file as each job
ends (a sweep killed at any moment leaves it true: the jobs that ended with their status, the
others `pending`) and rewritten from all the status files when a process starts and ends, so
the last one to finish leaves the whole picture.

One folder holds one grid: `sweep.json` records the grids whose jobs it lists (`grids`); a run
of another grid is refused unless asked to extend the folder (`extend`), which adds the new
grid's jobs to those listed. One sweep runs on a folder at a time (`sweep_lock`): a second
whole run stops at once with a message; the shards of one sweep (`shard` executor) run
together, each holding its rank's lock, and a whole run waits for none of them: it stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from filelock import Timeout as LockTimeout
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lexsem.atomic import atomic_open
from lexsem.errors import DataError, LexsemError
from lexsem.jsonl import read_json
from lexsem.sweep.grid import Grid, Job

__all__ = [
    "SWEEP_JSON",
    "JobStatus",
    "SweepResult",
    "folder_jobs",
    "read_status",
    "run_dir",
    "summary_line",
    "sweep_lock",
    "update_summary",
    "write_status",
    "write_summary",
]

SWEEP_JSON = "sweep.json"
SWEEP_LOCK = ".sweep.lock"  # held by a whole run of the sweep (shards: `.sweep.shard-<r>.lock`)
SCHEMA_VERSION = 2  # 1: one `grid`; 2: `grids`, the grids whose jobs the folder lists
Status = Literal["done", "skipped", "failed", "pending"]


class JobStatus(BaseModel):
    """One job's outcome: `done` (run now), `skipped` (its run folder already held it),
    `failed` (with the error, one line) or `pending` (not run yet)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    model: str
    benchmarks: list[str]
    status: Status
    error: str | None = None
    run_id: str | None = None
    seconds: float = 0.0
    worker: str | None = None  # host:pid (and rank) of the process that ran it
    executor: str | None = None


class SweepResult(BaseModel):
    """The state of a sweep folder after `run_sweep` (what `sweep.json` holds)."""

    schema_version: int = SCHEMA_VERSION
    name: str | None = None
    out: str
    executor: str
    jobs: list[JobStatus]
    merge: dict[str, Any] = Field(default_factory=dict)  # the stores merged, or the conflict
    shard: list[str] | None = None  # a shard's own jobs (not written to sweep.json)
    grid_ids: list[str] | None = None  # this run's grid's jobs, where the folder lists more

    def count(self, status: Status) -> int:
        return sum(j.status == status for j in self.own)

    @property
    def own(self) -> list[JobStatus]:
        """The jobs this process answered for: a shard's slice, else its grid's jobs."""
        mine = self.shard if self.shard is not None else self.grid_ids
        ids = set(mine) if mine is not None else None
        return [j for j in self.jobs if ids is None or j.id in ids]

    @property
    def failed(self) -> list[JobStatus]:
        return [j for j in self.own if j.status == "failed"]

    @property
    def complete(self) -> bool:
        """Every job's (a shard's: every job of its slice) run folder is there, and no store
        conflict."""
        ok = all(j.status in ("done", "skipped") for j in self.own)
        return ok and not self.merge.get("error")


def run_dir(out: Path, job_id: str) -> Path:
    return out / "runs" / job_id


def worker_name(rank: int | None = None) -> str:
    where = f"{socket.gethostname()}:{os.getpid()}"
    return where if rank is None else f"{where} rank {rank}"


def pending(job: Job) -> JobStatus:
    return JobStatus(
        id=job.id, model=job.model, benchmarks=list(job.config.benchmarks), status="pending"
    )


def write_status(out: Path, status: JobStatus) -> None:
    file = out / "jobs" / f"{status.id}.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(file, "w", encoding="utf-8") as fh:
        fh.write(status.model_dump_json(indent=2) + "\n")


def read_status(out: Path, job: Job | JobStatus) -> JobStatus:
    """The job's last status in `out` (`pending` when none was written or it is unreadable;
    for a `JobStatus` given, that status)."""
    file = out / "jobs" / f"{job.id}.json"
    try:
        return JobStatus.model_validate(read_json(file))
    except (DataError, ValidationError):
        return pending(job) if isinstance(job, Job) else job


def _grid_doc(grid: Grid) -> dict[str, Any]:
    return grid.model_dump(mode="json", by_alias=True)


def folder_jobs(
    out: Path, grid: Grid, jobs: list[Job], *, extend: bool = False
) -> list[Job | JobStatus]:
    """The jobs `OUT/sweep.json` is to list for a run of `grid` (its `jobs`): those, where the
    folder holds no sweep or the sweep of the same jobs; where it holds more grids (extended
    before) and `grid` is one of them, or with `extend`, the folder's jobs then the new ones.
    A folder holding another grid's sweep, without `extend`, is a `LexsemError`."""
    previous = read_summary(out)
    if previous is None:
        return list(jobs)
    held = [j.id for j in previous.jobs]
    ids = {j.id for j in jobs}
    if set(held) == ids:
        return list(jobs)
    if not extend and _grid_doc(grid) not in _read_grids(out):
        gone, new = len(set(held) - ids), len(ids - set(held))
        raise LexsemError(
            f"{out} holds the sweep of another grid ({len(held)} jobs; {gone} of them are not in "
            f"this grid, {new} of this grid's are not in it): give another folder, or --extend "
            "to add this grid's jobs to that sweep"
        )
    by_id = {j.id: j for j in jobs}
    listed: list[Job | JobStatus] = [by_id.get(j.id, j) for j in previous.jobs]
    return listed + [j for j in jobs if j.id not in set(held)]


def write_summary(
    out: Path,
    grid: Grid,
    jobs: list[Job | JobStatus],
    executor: str,
    merge: dict[str, Any] | None = None,
) -> SweepResult:
    """Rewrite `OUT/sweep.json` from the status files of `jobs` (the folder's: `folder_jobs`),
    under `OUT/sweep.json.lock`; `grid` joins the grids it records."""
    with FileLock(str(out / f"{SWEEP_JSON}.lock"), timeout=120):
        previous = read_summary(out)
        kept = previous.merge if previous is not None and merge is None else (merge or {})
        result = SweepResult(
            name=grid.name,
            out=str(out),
            executor=executor,
            jobs=[read_status(out, job) for job in jobs],
            merge=kept,
        )
        grids = _read_grids(out)
        if _grid_doc(grid) not in grids:
            grids.append(_grid_doc(grid))
        doc = result.model_dump(mode="json", exclude={"shard", "grid_ids"})
        doc["grids"] = grids
        _write(out, doc)
    return result


def update_summary(out: Path, status: JobStatus) -> None:
    """Put one job's `status` into `OUT/sweep.json` (as the job ends), under its lock."""
    with FileLock(str(out / f"{SWEEP_JSON}.lock"), timeout=120):
        doc = _read_doc(out)
        if doc is None:
            return
        entry = status.model_dump(mode="json")
        doc["jobs"] = [entry if j.get("id") == status.id else j for j in doc.get("jobs", [])]
        _write(out, doc)


def _write(out: Path, doc: dict[str, Any]) -> None:
    with atomic_open(out / SWEEP_JSON, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(doc, indent=2) + "\n")


def _read_doc(out: Path) -> dict[str, Any] | None:
    file = Path(out) / SWEEP_JSON
    if not file.is_file():
        return None
    try:
        doc = read_json(file)
    except DataError as exc:
        raise DataError(f"not a sweep summary ({exc.detail})", file=file, line=exc.line) from None
    if not isinstance(doc, dict):
        raise LexsemError(f"{file}: not a sweep summary (not a JSON object)")
    return doc


def _read_grids(out: Path) -> list[dict[str, Any]]:
    doc = _read_doc(out) or {}
    if "grids" in doc:
        return list(doc["grids"])
    return [doc["grid"]] if "grid" in doc else []  # schema 1


def read_summary(out: Path) -> SweepResult | None:
    """`OUT/sweep.json`, None where there is none; a damaged one is a `LexsemError`."""
    doc = _read_doc(out)
    if doc is None:
        return None
    for key in ("grid", "grids"):
        doc.pop(key, None)
    try:
        return SweepResult.model_validate(doc)
    except ValidationError as exc:
        first = str(exc).splitlines()[0]
        raise LexsemError(f"{Path(out) / SWEEP_JSON}: not a sweep summary ({first})") from None


@contextlib.contextmanager
def sweep_lock(out: Path, rank: int | None = None) -> Iterator[None]:
    """Hold the folder for one run: a whole run (`rank` None) its lock, a shard its rank's.
    Another whole run or a shard of the same rank holding it, or a whole run while a shard
    runs, is a `LexsemError` at once (no waiting)."""
    name = SWEEP_LOCK if rank is None else f".sweep.shard-{rank}.lock"
    lock = FileLock(str(out / name), timeout=0)
    busy = (
        f"{out}: another lexsem sweep is running on this folder (it holds {out / name}); "
        "wait for it to end, or give another folder"
    )
    try:
        lock.acquire()
    except LockTimeout:
        raise LexsemError(busy) from None
    try:
        others = sorted(out.glob(".sweep.shard-*.lock")) if rank is None else [out / SWEEP_LOCK]
        for other in others:  # a whole run and shards never run at once
            probe = FileLock(str(other), timeout=0)
            try:
                probe.acquire()
            except LockTimeout:
                raise LexsemError(
                    f"{out}: another lexsem sweep is running on this folder (it holds "
                    f"{other}); wait for it to end, or give another folder"
                ) from None
            probe.release()
        yield
    finally:
        lock.release()


def summary_line(result: SweepResult) -> str:
    """`8 done`, `2 done, 6 already done, 1 failed`: the jobs this run answered for, by what
    happened to them (`already done`: their run folder held their run), zero counts left out."""
    counts = [
        (result.count("done"), "done"),
        (result.count("skipped"), "already done"),
        (result.count("failed"), "failed"),
        (result.count("pending"), "not run"),
    ]
    shown = [f"{n} {what}" for n, what in counts if n]
    return ", ".join(shown) or "no job"

"""What a sweep folder says of its jobs: one status file per job, and `sweep.json` over them.

    OUT/
      sweep.json            the summary: the grid, each job's status, the stores merged
      jobs/<job id>.json    one job's status, written by whichever process ran it
      runs/<job id>/        the job's run folder (run.json, items.parquet)
      stores/<job id>/      a job's own request store, until merged into the main store

Each process writes only the status files of its own jobs (atomically), so shards and Ray's
driver never write one file at once; `sweep.json` is rewritten from all of them under a lock
file by each process that finishes, so the last one to finish leaves the whole picture.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lexsem.atomic import atomic_open
from lexsem.errors import LexsemError
from lexsem.sweep.grid import Grid, Job

__all__ = [
    "SWEEP_JSON",
    "JobStatus",
    "SweepResult",
    "read_status",
    "run_dir",
    "write_status",
    "write_summary",
]

SWEEP_JSON = "sweep.json"
SCHEMA_VERSION = 1
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

    def count(self, status: Status) -> int:
        return sum(j.status == status for j in self.jobs)

    @property
    def own(self) -> list[JobStatus]:
        """The jobs this process answered for: a shard's slice, else every job."""
        mine = set(self.shard) if self.shard is not None else None
        return [j for j in self.jobs if mine is None or j.id in mine]

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


def read_status(out: Path, job: Job) -> JobStatus:
    """The job's last status in `out` (`pending` when none was written or it is unreadable)."""
    file = out / "jobs" / f"{job.id}.json"
    try:
        return JobStatus.model_validate_json(file.read_bytes())
    except (OSError, ValidationError):
        return pending(job)


def write_summary(
    out: Path, grid: Grid, jobs: list[Job], executor: str, merge: dict[str, Any] | None = None
) -> SweepResult:
    """Rewrite `OUT/sweep.json` from the jobs' status files, under `OUT/sweep.json.lock`."""
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
        doc = result.model_dump(mode="json", exclude={"shard"})
        doc["grid"] = grid.model_dump(mode="json", by_alias=True)
        with atomic_open(out / SWEEP_JSON, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, indent=2) + "\n")
    return result


def read_summary(out: Path) -> SweepResult | None:
    """`OUT/sweep.json`, None where there is none; a damaged one is a `LexsemError`."""
    file = Path(out) / SWEEP_JSON
    if not file.is_file():
        return None
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
        doc.pop("grid", None)
        return SweepResult.model_validate(doc)
    except (OSError, ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise LexsemError(f"{file}: not a sweep summary ({first})") from None

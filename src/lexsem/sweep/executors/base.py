"""The executor interface: what `run_sweep` asks of an executor, and what it gives it.

An executor runs the jobs still to run (`run`), calling `ctx.report` with each job's status as
the job ends: `run_sweep` has already skipped the jobs that are done, records each status, and
merges the per-job request stores afterwards. The one signature, `run(jobs, ctx)`, serves
every executor; `SweepContext` carries everything a sweep's options say (the sweep folder, the
store mode, the Ray address, the shard rank). An executor that runs only a part of the grid in
each process (`shard`) also says which part (`select`) and sets `partial`. An executor that
spreads a job's encoding over workers (`ray`, `lexsem.sweep.spread`) sets `spreads`; the
others never get a job of `resources.spread` > 1 (`run_sweep` refuses it before any work).

A new executor is a class with `run` (subclass `Executor` for the defaults of the rest), an
instance of it, and one line in `lexsem.sweep.executors.catalog` (or `EXECUTORS.add` in a
grid's plugin module): docs/extending.md shows one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from lexsem.sweep.grid import Job
from lexsem.sweep.record import JobStatus, worker_name

if TYPE_CHECKING:
    from lexsem.sweep.job_run import StoreMode

__all__ = ["Echo", "Executor", "Report", "SweepContext"]

Report = Callable[[JobStatus], None]
Echo = Callable[[str], None]


def _quiet(text: str) -> None:
    pass


@dataclass(frozen=True)
class SweepContext:
    """What a sweep gives its executor: where the runs go, how the jobs store their requests,
    the callback each job's status goes to, and the sweep's executor options."""

    out: Path  # the sweep folder: runs/<id>/, stores/<id>/
    stores: StoreMode  # `shared` or `per-job` (`lexsem.sweep.job_run`)
    report: Report  # called once per job, with its status, as the job ends
    executor: str  # the executor's registered name (recorded in each status)
    rank: int | None = None  # shard: this process's rank
    world_size: int | None = None  # shard: the number of shards
    address: str | None = None  # Ray: the cluster
    max_retries: int = 3  # Ray: times a job is retried when its worker is lost
    echo: Echo = _quiet  # progress lines

    @property
    def worker(self) -> str:
        """host:pid (and rank) of this process, as a job's status records it."""
        return worker_name(self.rank)

    def replace(self, **changes: object) -> SweepContext:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@runtime_checkable
class Executor(Protocol):
    """Runs a sweep's jobs. Subclass it to inherit the defaults; only `run` is required."""

    stores: ClassVar[StoreMode] = "shared"  # the store mode when the sweep names none
    partial: ClassVar[bool] = False  # True: each process runs a part (`select`); the stores
    # are merged by a later whole (non-partial) run of the sweep
    spreads: ClassVar[bool] = False  # True: `run` also takes jobs of `resources.spread` > 1

    def select(self, jobs: list[Job], ctx: SweepContext) -> tuple[list[Job], SweepContext]:
        """The jobs this process answers for, and the context to run them with (all of
        them, unchanged; a shard: its slice, its rank found). Runs before anything is done,
        so it may refuse the options with a `LexsemError`."""
        return jobs, ctx

    def run(self, jobs: list[Job], ctx: SweepContext) -> None:
        """Run `jobs` (none of them done; spread ones only where `spreads`), calling
        `ctx.report(status)` once per job as it ends. A job's own error is its `failed`
        status, never an exception."""
        ...

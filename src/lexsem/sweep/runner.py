"""`run_sweep(grid, out, executor=...)`: a grid's jobs run into a sweep folder, resumed.

The grid expands to jobs (`lexsem.sweep.grid.expand`); the jobs whose run folder already holds
their run are `skipped`; the others run on the executor (`local`, `shard`, `ray`), each
status recorded as it ends (`lexsem.sweep.record`); the request stores of `per-job` jobs are
merged into the main store (`lexsem.sweep.store_merge`) by the `local` and `ray` executors —
a shard leaves them in `OUT/stores/` for a final `local` run, which merges them and runs
nothing else when every job is done. A sweep killed at any moment leaves complete run folders
only; running it again runs what is left.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lexsem.errors import LexsemError
from lexsem.paths import cache_dir as default_cache_dir
from lexsem.sweep.executors import EXECUTORS
from lexsem.sweep.grid import MAX_SPREAD, Grid, Job, expand, load_grid
from lexsem.sweep.job_run import StoreMode, done_run, import_plugins
from lexsem.sweep.record import (
    SWEEP_JSON,
    JobStatus,
    SweepResult,
    pending,
    worker_name,
    write_status,
    write_summary,
)
from lexsem.sweep.store_merge import MergeStats, StoreConflict, merge_stores

__all__ = ["check_sweep_folder", "merge_job_stores", "run_sweep", "with_spread"]

Echo = Callable[[str], None]


def _quiet(text: str) -> None:
    pass


def check_sweep_folder(out: Path) -> None:
    """Refuse, before any work, an `out` that is a file or a folder holding other things."""
    if out.exists() and not out.is_dir():
        raise LexsemError(f"{out}: not a folder (a sweep writes a folder of run folders)")
    if out.is_dir() and any(out.iterdir()):
        marks = (SWEEP_JSON, "jobs", "runs")
        if not any((out / m).exists() for m in marks):
            raise LexsemError(
                f"{out}: the folder holds files but no sweep ({SWEEP_JSON}); give a new or "
                "empty folder, or the folder of this sweep"
            )


def merge_job_stores(out: Path, jobs: list[Job], echo: Echo = _quiet) -> dict[str, Any]:
    """Merge each `OUT/stores/<id>/` into its job's main store (its config's cache folder),
    removing it once merged; a conflict keeps it and is returned as `error`."""
    by_id = {job.id: job for job in jobs}
    total, errors = MergeStats(), []
    folder = out / "stores"
    for store in sorted(folder.iterdir()) if folder.is_dir() else []:
        job = by_id.get(store.name)
        if job is None:
            echo(f"warning: {store}: no job of this grid has that id; left unmerged")
            continue
        try:
            total += merge_stores(store, default_cache_dir(job.config.cache_dir))
        except StoreConflict as exc:
            errors.append(str(exc))
            continue
        shutil.rmtree(store, ignore_errors=True)
    with_error = {"error": errors[0], "conflicts": len(errors)} if errors else {}
    return {"files": total.files, "added": total.added, "present": total.present,
            "damaged": total.damaged, **with_error}  # fmt: skip


def run_sweep(
    grid: Grid | str | Path,
    out: str | Path,
    executor: str = "local",
    *,
    stores: StoreMode | None = None,
    address: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    max_retries: int = 3,
    spread: int | None = None,
    dry_run: bool = False,
    echo: Echo = _quiet,
) -> SweepResult:
    """Run the jobs of `grid` (a `Grid` or a grid file) not yet done into `out`; the state of
    the sweep folder afterwards (also in `OUT/sweep.json`). `stores`: `shared` or `per-job`
    (default: `per-job` on Ray, else `shared`; see `lexsem.sweep.job_run`). `dry_run`: say
    which jobs would run, write nothing. `spread`: the Ray actors every job's encoding is
    spread over (`lexsem.sweep.spread`), instead of each job's `resources.spread`."""
    if executor not in EXECUTORS:
        raise LexsemError(f"unknown executor {executor!r}; choose {', '.join(EXECUTORS)}")
    if not isinstance(grid, Grid):
        grid = load_grid(grid)
    jobs = expand(grid)
    if spread is not None:
        jobs = with_spread(jobs, spread)
    out = Path(out)
    check_sweep_folder(out)
    import_plugins(grid.plugins)
    store_mode: StoreMode = stores or ("per-job" if executor == "ray" else "shared")
    mine = jobs
    if executor == "shard":
        from lexsem.sweep.executors.shard import rank_and_world, shard_slice

        rank, world_size = rank_and_world(rank, world_size)
        mine = shard_slice(jobs, rank, world_size)
    if dry_run:
        return _plan(grid, jobs, mine, out, executor)
    out.mkdir(parents=True, exist_ok=True)
    todo = _skip_done(mine, out, executor, rank, echo)
    write_summary(out, grid, jobs, executor)
    echo(f"{len(todo)} of {len(jobs)} jobs to run ({executor})")

    def report(status: JobStatus) -> None:
        write_status(out, status)
        tail = f": {status.error}" if status.error else f" ({status.seconds:.1f} s)"
        echo(f"{status.status} {status.id}{tail}")

    merge: dict[str, Any] | None = None
    try:
        spread_jobs = [job for job in todo if job.resources.spread > 1]
        if spread_jobs:
            _spread(spread_jobs, out, report, address, max_retries, rank, executor, echo)
        rest = [job for job in todo if job.resources.spread == 1]
        _execute(executor, rest, out, store_mode, report, address, max_retries, rank)
    finally:
        if executor != "shard":
            merge = merge_job_stores(out, jobs, echo)
        result = write_summary(out, grid, jobs, executor, merge)
    if executor == "shard":
        result = result.model_copy(update={"shard": [job.id for job in mine]})
    return result


def _execute(
    executor: str,
    todo: list[Job],
    out: Path,
    stores: StoreMode,
    report: Callable[[JobStatus], None],
    address: str | None,
    max_retries: int,
    rank: int | None,
) -> None:
    if not todo:
        return
    if executor == "ray":
        from lexsem.sweep.executors.ray import run_ray

        run_ray(todo, out, stores=stores, report=report, address=address, max_retries=max_retries)
    elif executor == "shard":
        from lexsem.sweep.executors.shard import run_shard

        run_shard(todo, out, stores=stores, report=report, rank=rank or 0)
    else:
        from lexsem.sweep.executors.local import run_local

        run_local(todo, out, stores=stores, report=report)


def with_spread(jobs: list[Job], spread: int) -> list[Job]:
    """`jobs` with their encoding spread over `spread` Ray actors (1: not spread)."""
    if not 1 <= spread <= MAX_SPREAD:
        raise LexsemError(f"spread must be from 1 to {MAX_SPREAD}, not {spread}")
    out = []
    for job in jobs:
        if spread > 1 and not job.config.use_cache:
            raise LexsemError(
                f"job {job.id}: spreading its encoding needs the request store (use_cache = true)"
            )
        res = job.resources.model_copy(update={"spread": spread})
        out.append(job.model_copy(update={"resources": res}))
    return out


def _spread(
    jobs: list[Job],
    out: Path,
    report: Callable[[JobStatus], None],
    address: str | None,
    max_retries: int,
    rank: int | None,
    executor: str,
    echo: Echo,
) -> None:
    """Run `jobs` here, one after another, each job's encoding spread over its Ray actors
    (`lexsem.sweep.spread`), its run through the main store."""
    from lexsem.sweep.executors.ray import connect
    from lexsem.sweep.spread import run_spread_job

    started = connect(address)
    try:
        for job in jobs:
            report(
                run_spread_job(
                    job, out, spread=job.resources.spread, max_retries=max_retries,
                    rank=rank, executor=executor, echo=echo,
                )
            )  # fmt: skip
    finally:
        if started:
            import ray

            ray.shutdown()


def _skip_done(
    jobs: list[Job], out: Path, executor: str, rank: int | None, echo: Echo
) -> list[Job]:
    todo = []
    for job in jobs:
        run_id = done_run(job, out)
        if run_id is None:
            todo.append(job)
            continue
        status = pending(job).model_copy(
            update={"status": "skipped", "run_id": run_id, "executor": executor,
                    "worker": worker_name(rank)}
        )  # fmt: skip
        write_status(out, status)
    if len(todo) < len(jobs):
        echo(f"{len(jobs) - len(todo)} jobs already done: skipped")
    return todo


def _plan(grid: Grid, jobs: list[Job], mine: list[Job], out: Path, executor: str) -> SweepResult:
    """What a run would do: each job of this process `skipped` (done) or `pending`."""
    statuses = []
    for job in mine:
        run_id = done_run(job, out) if out.is_dir() else None
        status = "skipped" if run_id is not None else "pending"
        statuses.append(pending(job).model_copy(update={"status": status, "run_id": run_id}))
    return SweepResult(name=grid.name, out=str(out), executor=executor, jobs=statuses)

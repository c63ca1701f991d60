"""`run_sweep(grid, out, executor=...)`: a grid's jobs run into a sweep folder, resumed.

The grid expands to jobs (`lexsem.sweep.grid.expand`); the jobs whose run folder already holds
their run are `skipped`; the others run on the executor named (`lexsem.sweep.executors`:
`local`, `shard`, `ray` or one registered by a plugin), each status recorded as it ends
(`lexsem.sweep.record`); the request stores of `per-job` jobs are then merged into the main
store (`RequestStore.merge`) — unless the executor is partial (`shard`), which leaves them in
`OUT/stores/` for a final whole run, which merges them and runs nothing else when every job is
done. A store file that cannot be merged (a conflict, a damaged file) stays there, named with
the command that resolves it, and the next run retries it; what merged stays merged. A sweep
killed at any moment leaves complete run folders only; running it again runs what is left.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

from lexsem.engine.request_store import MergeStats, merge_store, store_keys
from lexsem.errors import CacheError, LexsemError
from lexsem.paths import cache_dir as default_cache_dir
from lexsem.sweep.executors import get_executor
from lexsem.sweep.executors.base import Echo, Executor, SweepContext
from lexsem.sweep.grid import MAX_SPREAD, Grid, Job, expand, load_grid
from lexsem.sweep.grid_check import check_jobs
from lexsem.sweep.job_run import StoreMode, done_run, import_plugins
from lexsem.sweep.record import (
    SWEEP_JSON,
    JobStatus,
    SweepResult,
    folder_jobs,
    pending,
    summary_line,
    sweep_lock,
    update_summary,
    write_status,
    write_summary,
)

__all__ = [
    "check_sweep_folder",
    "interrupted_message",
    "merge_job_stores",
    "resume_command",
    "run_sweep",
    "with_spread",
]


def _quiet(text: str) -> None:
    pass


def check_sweep_folder(out: Path) -> None:
    """Refuse, before any work, an `out` that is a file or a folder holding other things."""
    if out.exists() and not out.is_dir():
        raise LexsemError(f"{out}: not a folder (a sweep writes a folder of run folders)")
    if out.is_dir() and any(out.iterdir()):
        # a sweep's files, also those of another process (a shard) writing its first summary
        marks = (SWEEP_JSON, f"{SWEEP_JSON}.lock", "jobs", "runs")
        names = [p.name for p in out.iterdir()]
        if not any(n in marks or n.startswith((f".{SWEEP_JSON}.", ".sweep.")) for n in names):
            raise LexsemError(
                f"{out}: the folder holds files but no sweep ({SWEEP_JSON}); give a new or "
                "empty folder, or the folder of this sweep"
            )


def merge_job_stores(out: Path, jobs: list[Job], echo: Echo = _quiet) -> dict[str, Any]:
    """Merge each `OUT/stores/<id>/` into its job's main store (its config's cache folder),
    each store file removed once merged. A file that cannot be merged (a `StoreConflict`, a
    damaged file) is left for the next run, its error in `errors` (the first also `error`);
    the others are merged. The counts of `MergeStats`; `max_deviation`: the largest relative
    deviation of a value kept within the fp32 tolerance."""
    by_id = {job.id: job for job in jobs}
    total, errors = MergeStats(), []
    folder = out / "stores"
    for store in sorted(folder.iterdir()) if folder.is_dir() else []:
        job = by_id.get(store.name)
        if job is None or not store.is_dir():
            echo(f"warning: {store}: no job of this grid has that id; left unmerged")
            continue
        for key in store_keys(store):
            try:
                total += merge_store(
                    store, default_cache_dir(job.config.cache_dir), key, remove=True
                )
            except CacheError as exc:  # left in place: the next run retries it
                errors.append(f"{exc} (then run the sweep again)")
        if not store_keys(store):
            shutil.rmtree(store, ignore_errors=True)
    if total.files:
        echo(
            f"merged {total.files} store files: {total.added} values added, {total.present} "
            f"present, {total.close} within the fp32 tolerance (largest deviation "
            f"{total.max_deviation:.2g}), {total.damaged} damaged left out"
        )
    with_error = {"error": errors[0], "conflicts": len(errors), "errors": errors} if errors else {}
    return {"files": total.files, "added": total.added, "present": total.present,
            "close": total.close, "max_deviation": total.max_deviation,
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
    extend: bool = False,
    echo: Echo = _quiet,
) -> SweepResult:
    """Run the jobs of `grid` (a `Grid` or a grid file) not yet done into `out` on the
    executor named `executor` (`lexsem.sweep.executors.EXECUTORS`); the state of the sweep
    folder afterwards (also in `OUT/sweep.json`). `stores`: `shared` or `per-job` (default:
    the executor's, `per-job` on Ray, else `shared`; see `lexsem.sweep.job_run`). `dry_run`:
    say which jobs would run, write nothing. `spread`: the Ray actors every job's encoding is
    spread over (`lexsem.sweep.spread`), instead of each job's `resources.spread` (an
    executor that does not spread, `Executor.spreads`, refuses a spread job before any work).
    `extend`: add the grid's jobs to a folder holding another grid's sweep (else refused). Ctrl-C
    stops it, keeping every job's run that ended, and says how to resume."""
    source = None if isinstance(grid, Grid) else grid
    if not isinstance(grid, Grid):
        grid = load_grid(grid)
    jobs = expand(grid)
    if spread is not None:
        jobs = with_spread(jobs, spread)
    out = Path(out)
    check_sweep_folder(out)
    import_plugins(grid.plugins)  # before the executor and the check: a plugin may register
    ex = get_executor(executor)
    check_jobs(jobs, source)  # every model, benchmark, subset and task, before any work
    wide = next((job for job in jobs if job.resources.spread > 1), None)
    if wide is not None and not ex.spreads:
        raise LexsemError(
            f"job {wide.id}: resources.spread = {wide.resources.spread}: the {executor} "
            "executor does not spread a job's encoding; use --executor ray, or --spread 1 to "
            "run it in one process"
        )

    def report(status: JobStatus) -> None:
        write_status(out, status)
        update_summary(out, status)  # sweep.json true at every moment
        tail = f": {status.error}" if status.error else f" ({status.seconds:.1f} s)"
        echo(f"{status.status} {status.id}{tail}")

    ctx = SweepContext(
        out=out, stores=stores or ex.stores, report=report,
        executor=executor, rank=rank, world_size=world_size, address=address,
        max_retries=max_retries, echo=echo,
    )  # fmt: skip
    mine, ctx = ex.select(jobs, ctx)
    if dry_run:
        if out.is_dir():
            folder_jobs(out, grid, jobs, extend=extend)  # another grid's folder: refused
        return _plan(grid, mine, out, executor)
    out.mkdir(parents=True, exist_ok=True)
    with sweep_lock(out, ctx.rank if ex.partial else None):
        listed = folder_jobs(out, grid, jobs, extend=extend)
        command = resume_command(source, out, executor, stores=stores, address=address,
                                 rank=rank, world_size=world_size, spread=spread,
                                 extend=extend)  # fmt: skip
        return _run(grid, jobs, listed, mine, ex, ctx, command)


def _run(
    grid: Grid, jobs: list[Job], listed: list[Job | JobStatus], mine: list[Job], ex: Executor,
    ctx: SweepContext, command: str,
) -> SweepResult:  # fmt: skip
    """Run the jobs of this process (`mine`) not yet done; the folder lists `listed`."""
    out, executor, echo = ctx.out, ctx.executor, ctx.echo
    todo = _skip_done(mine, ctx)
    write_summary(out, grid, listed, executor)
    echo(f"{len(todo)} of {len(jobs)} jobs to run ({executor})")
    merge: dict[str, Any] | None = None
    stopped: KeyboardInterrupt | None = None
    try:
        if todo:
            ex.run(todo, ctx)
    except KeyboardInterrupt as exc:  # Ctrl-C: what ended is kept; say how to resume
        stopped = exc
    finally:
        if not ex.partial:
            merge = merge_job_stores(out, jobs, echo)
        result = write_summary(out, grid, listed, executor, merge)
    ids = [job.id for job in jobs] if len(listed) != len(jobs) else None
    result = result.model_copy(update={"grid_ids": ids})
    if ex.partial:  # answers for its own jobs; the merge is a later whole run's
        result = result.model_copy(update={"shard": [job.id for job in mine], "merge": {}})
    if stopped is not None:
        text = interrupted_message(result, command)
        stopped.message = lambda: text  # type: ignore[attr-defined]  (the CLI prints it)
        raise stopped
    return result


def interrupted_message(result: SweepResult, command: str) -> str:
    """What Ctrl-C kept, and the command that resumes the sweep."""
    own = result.own
    kept = sum(j.status in ("done", "skipped") for j in own)
    left = len(own) - kept
    return (
        f"interrupted: the runs of {kept} of {len(own)} jobs are kept in {result.out}/runs "
        f"({summary_line(result)}); {left} job{'s' * (left != 1)} left, pending in "
        f"{Path(result.out) / SWEEP_JSON}. To resume (the jobs done are skipped): {command}"
    )


def resume_command(source: str | Path | None, out: Path, executor: str, **options: object) -> str:
    """The `lexsem sweep` command that runs this sweep again (the options given, not their
    defaults)."""
    grid = shlex.quote(str(source)) if source is not None else "GRID.toml"
    parts = ["lexsem", "sweep", grid, "-o", shlex.quote(str(out))]
    if executor != "local":
        parts += ["--executor", shlex.quote(executor)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif value is not None and value is not False:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts)


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


def _skip_done(jobs: list[Job], ctx: SweepContext) -> list[Job]:
    todo = []
    for job in jobs:
        run_id = done_run(job, ctx.out)
        if run_id is None:
            todo.append(job)
            continue
        status = pending(job).model_copy(
            update={"status": "skipped", "run_id": run_id, "executor": ctx.executor,
                    "worker": ctx.worker}
        )  # fmt: skip
        write_status(ctx.out, status)
    if len(todo) < len(jobs):
        ctx.echo(f"{len(jobs) - len(todo)} jobs already done: skipped")
    return todo


def _plan(grid: Grid, mine: list[Job], out: Path, executor: str) -> SweepResult:
    """What a run would do: each job of this process `skipped` (done) or `pending`. The
    folder's check (another grid's sweep there) is made as a run makes it."""
    statuses = []
    for job in mine:
        run_id = done_run(job, out) if out.is_dir() else None
        status = "skipped" if run_id is not None else "pending"
        statuses.append(pending(job).model_copy(update={"status": status, "run_id": run_id}))
    return SweepResult(name=grid.name, out=str(out), executor=executor, jobs=statuses)

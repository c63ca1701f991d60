"""`reproduce(TABLE, OUT)`: a paper table from its facts to the comparison, in one call.

The rows with a spec whose packages, benchmark data and COCO images (for image tasks) are
here run, and offline or with `only_installed` only those whose weights are installed
(`lexsem.reproduce.availability`; online, weights are fetched as any run does); the others are
listed with what they need. The rows run as a `lexsem sweep` of the
table's grid (`lexsem.reproduce.grid`) through any of its executors (local, shard, ray): run
folders in `OUT/runs/<job id>/`, jobs done earlier skipped, a failed job reported without
stopping the others. The comparison goes to `OUT/comparison.md` and `OUT/comparison.csv`
(files there that lexsem did not write are refused before any work unless `force`);
`failure` says whether the table counts as failed (nothing compared, or a failed row).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.atomic import atomic_open
from lexsem.errors import LexsemError
from lexsem.outputs import check_output_dir, check_outputs
from lexsem.paths import offline
from lexsem.report.paper.catalog import get_table
from lexsem.report.paper.facts import ModelRow, PaperTable
from lexsem.reproduce.availability import missing
from lexsem.reproduce.grid import table_grid
from lexsem.reproduce.published_vs_measured import Comparison, compare
from lexsem.reproduce.render import CSV_HEADS, to_csv_text, to_markdown_text
from lexsem.results.run_folder import load_run
from lexsem.results.schema import RunRecord
from lexsem.sweep.executors.catalog import get_executor
from lexsem.sweep.grid import Job, expand
from lexsem.sweep.record import JobStatus, run_dir
from lexsem.sweep.runner import run_sweep

Echo = Callable[[str], None]

MARKDOWN = "comparison.md"
CSV = "comparison.csv"


@dataclass(frozen=True)
class JobOutcome:
    """A job of the table's sweep: its run record, or the error that stopped it; `reused`:
    its run folder was there already."""

    job: Job
    record: RunRecord | None = None
    error: str | None = None
    reused: bool = False


@dataclass(frozen=True)
class Reproduction:
    table: PaperTable
    comparisons: list[Comparison]
    outcomes: list[JobOutcome]
    not_run: dict[str, str]  # row -> what it needs


def select_rows(table: PaperTable, only: Sequence[str] | None) -> list[ModelRow]:
    """The table's rows, or those named in `only` (an unknown name is an error naming the
    known ones)."""
    if not only:
        return list(table.rows)
    names = [r.name for r in table.rows]
    unknown = [n for n in only if n not in names]
    if unknown:
        from lexsem.registry import did_you_mean

        raise LexsemError(
            f"table {table.name} has no row {unknown[0]!r}{did_you_mean(unknown[0], names)}; "
            f"rows: {', '.join(names)}"
        )
    return [r for r in table.rows if r.name in only]


def plan_rows(
    table: PaperTable,
    rows: Sequence[ModelRow],
    *,
    only_installed: bool,
    is_offline: bool,
    settings: Mapping[str, Any] | None = None,
) -> tuple[list[ModelRow], dict[str, str]]:
    """(the rows to run, row -> what each other row needs). Rows without a spec never run; a
    row runs when its backend's packages, its benchmarks' data and COCO images (for image
    tasks) are here (`lexsem.reproduce.availability`, with the run's `settings`); offline or
    with `only_installed`, its weights must be installed too."""
    check = only_installed or is_offline
    run: list[ModelRow] = []
    not_run: dict[str, str] = {}
    for row in rows:
        why = missing(row, table, settings, is_offline=is_offline, weights=check)
        if why is None:
            run.append(row)
        else:
            not_run[row.name] = why
    return run, not_run


def check_comparison_files(out: Path, *, force: bool) -> None:
    """Refuse, before any work, `OUT/comparison.md` or `OUT/comparison.csv` that lexsem did
    not write (`lexsem.outputs.check_outputs`), unless `force`. A CSV has no mark: one that
    opens with the comparison's own header line is the comparison's."""
    csv_file = out / CSV
    # one of an earlier lexsem's header (without the activation, n, attainable) is lexsem's too
    csv_ours = force or any(_opens_with(csv_file, ",".join(h) + "\n") for h in CSV_HEADS)
    check_outputs({"-o": out / MARKDOWN}, inputs=(), force=force)
    check_outputs({"-o": csv_file}, inputs=(), force=csv_ours)


def _opens_with(path: Path, head: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(len(head)) == head
    except OSError:
        return False


def failure(done: Reproduction) -> str | None:
    """Why `done` counts as failed (one line), or None: no cell compared (nothing run), or a
    row whose job failed."""
    failed = sorted({c.model for c in done.comparisons if c.status == "failed"})
    if failed:
        return f"{len(failed)} row{'s' * (len(failed) != 1)} failed: {', '.join(failed)}"
    if not any(c.status == "compared" for c in done.comparisons):
        return (
            f"nothing of {done.table.name} was compared: no row could run here "
            "(the rows not compared say what each needs)"
        )
    return None


def reproduce(
    name: str,
    out: str | Path,
    *,
    executor: str = "local",
    only_installed: bool = False,
    rows: Sequence[str] | None = None,
    settings: Mapping[str, Any] | None = None,
    sweep_options: Mapping[str, Any] | None = None,
    force: bool = False,
    echo: Echo = lambda _text: None,
) -> Reproduction:
    """Run paper table `name` into `out` and compare it with the published numbers.
    `settings`: EvalConfig fields for every job (data_dir, cache_dir, device, n_boot, ...);
    `executor` and `sweep_options` (address, rank, world_size, max_retries; `extend` is True
    unless given): how the sweep runs (`lexsem.sweep.runner.run_sweep`); `force`: replace a
    comparison.md / comparison.csv in `out` that lexsem did not write. `failure(result)` says
    whether the table counts as failed."""
    table = get_table(name)
    chosen = select_rows(table, rows)
    get_executor(executor)  # an unknown executor is refused (did you mean) before any work
    settings = dict(settings or {})
    data_dir = settings.get("data_dir")
    if data_dir is not None and not Path(data_dir).expanduser().is_dir():
        what = "is not a folder" if Path(data_dir).expanduser().exists() else "does not exist"
        raise LexsemError(f"data folder {data_dir} (--data-dir, $LEXSEM_DATA_DIR) {what}")
    out = Path(out)
    check_output_dir(out, kind=None, option="-o")
    check_comparison_files(out, force=force)
    is_offline = bool(settings.get("offline")) or offline()
    runnable, not_run = plan_rows(
        table, chosen, only_installed=only_installed, is_offline=is_offline, settings=settings
    )
    for row_name, why in not_run.items():
        echo(f"not run: {row_name}: needs {why}")
    outcomes: list[JobOutcome] = []
    if runnable:
        grid = table_grid(table, runnable, settings)
        # the folder holds one table: a run of other rows adds them to its sweep
        options = {"extend": True, **(sweep_options or {})}
        result = run_sweep(grid, out, executor, echo=echo, **options)
        outcomes = _outcomes(expand(grid), result.jobs, out)
    records: dict[str, list[RunRecord]] = {}
    failed: dict[str, str] = {}
    for o in outcomes:
        row_name = o.job.config.name or o.job.model
        if o.record is not None:
            records.setdefault(row_name, []).append(o.record)
        elif o.error is not None:
            failed[row_name] = o.error
    chosen_names = {r.name for r in chosen}
    comparisons = [c for c in compare(table, records, not_run, failed) if c.model in chosen_names]
    out.mkdir(parents=True, exist_ok=True)
    with atomic_open(out / MARKDOWN, "w", encoding="utf-8") as fh:
        fh.write(to_markdown_text(table, comparisons))
    with atomic_open(out / CSV, "w", encoding="utf-8") as fh:
        fh.write(to_csv_text(table, comparisons))
    return Reproduction(table, comparisons, outcomes, not_run)


def _outcomes(jobs: list[Job], statuses: list[JobStatus], out: Path) -> list[JobOutcome]:
    """Each job's run record (read from its run folder) or its error, in grid order. A shard
    sees only its own jobs run: the others are left out until their shards are done."""
    by_id = {s.id: s for s in statuses}
    found = []
    for job in jobs:
        status = by_id.get(job.id)
        if status is None or status.status == "pending":
            continue
        if status.status == "failed":
            found.append(JobOutcome(job, error=status.error or "failed"))
            continue
        try:
            record = load_run(run_dir(out, job.id))
        except LexsemError as exc:
            found.append(JobOutcome(job, error=str(exc)))
            continue
        found.append(JobOutcome(job, record=record, reused=status.status == "skipped"))
    return found

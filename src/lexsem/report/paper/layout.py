"""A paper's table of runs as the report lays it out, and the one cell builder that fills it.

A `RunLayout` is data: the table it cites, which results are its columns (`RunColumn`: a
benchmark, task, metric and subset, under the paper's name), which runs are its rows (`RunRow`:
text cells, then the runs whose results fill the cells), its notes. `render` fills any layout:
each cell is the first of the row's runs with that result (`lexsem.report.paper.facts.
find_result`, the lookup `lexsem reproduce` uses), shown as in the other report tables (`60.00`,
the coverage when items were not scored, the interval with `ci`); the ties and the coverage are
said in the notes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lexsem.report.paper.facts import find_result
from lexsem.report.tables import Table, _cell, label, subset_order
from lexsem.results.samples import answers_a_sample
from lexsem.results.schema import MetricResult, RunRecord
from lexsem.stats.bootstrap import MACRO

COVERAGE = (
    "(scored/total): not every item was scored (skipped, left out, or no answer recorded); the "
    "accuracy is over the scored items only (run.json: skipped, dropped, notices)"
)


@dataclass(frozen=True)
class RunColumn:
    """A column: the result at (benchmark, task, metric, subset), under `header`; a task or
    metric of None is the row's. `mean_of`: an average column, the run's macro average when its
    subsets are exactly these, else the mean of their cells (blank when one is missing)."""

    header: str
    benchmark: str
    subset: str
    task: str | None = None
    metric: str | None = None
    mean_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunRow:
    """A row: its text cells, then one cell per column from the first of `runs` with that
    result; `task` and `metric` for the columns that leave them to the row; `name` says which
    row it is in the notes."""

    lead: tuple[str, ...]
    runs: tuple[RunRecord, ...]
    name: str
    task: str | None = None
    metric: str | None = None


Columns = Callable[[Sequence[RunRecord], str], list[RunColumn]]
Rows = Callable[[Sequence[RunRecord], str, Mapping[str, str]], list[RunRow]]


@dataclass(frozen=True)
class RunLayout:
    """A paper's table of runs. `per_benchmark`: one table per benchmark on which some run has
    one of these tasks (titled `BENCH — title (cite)`); empty: one table of all the runs
    (`title (cite)`, the benchmark given to `columns` and `rows` is ""). `columns(runs, bench)`
    and `rows(runs, bench, labels)` (labels: run id -> its label) make the table; a table
    without rows is left out, and so is a row without any cell. `fixed`: rows printed before
    the runs' as the paper prints them. `note` is the first note; `{columns[k]}` in it is the
    header of the k-th column of results."""

    cite: str
    title: str
    lead: tuple[str, ...]
    columns: Columns
    rows: Rows
    note: str
    per_benchmark: tuple[str, ...] = ()
    fixed: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class SubsetColumns:
    """One column per plain subset of the table's benchmark on which the runs have one of
    `tasks`: the paper's subsets first, in its order and under its names (`names`), then any
    other in the benchmark's order under lexsem's label. Task and metric: the row's."""

    tasks: tuple[str, ...]
    names: Mapping[str, str]

    def __call__(self, records: Sequence[RunRecord], bench: str) -> list[RunColumn]:
        subsets = plain_subsets(records, bench, self.tasks, tuple(self.names))
        return [RunColumn(self.names.get(s, label(s)), bench, s) for s in subsets]


def benchmarks_of(records: Iterable[RunRecord], tasks: Iterable[str]) -> list[str]:
    """The benchmarks with results of `tasks` (task by task, first seen first)."""
    records = list(records)
    return list(
        dict.fromkeys(r.benchmark for t in tasks for rec in records for r in rec.results
                      if r.task == t)
    )  # fmt: skip


def plain_subsets(
    records: Sequence[RunRecord], bench: str, tasks: Iterable[str], order: Sequence[str]
) -> list[str]:
    """The plain subsets of (bench, tasks) in the runs: those in `order` first, in its order."""
    want = set(tasks)
    found = list(dict.fromkeys(r.subset for rec in records for r in rec.results
                               if r.benchmark == bench and r.task in want
                               and not r.subset.startswith("_")))  # fmt: skip
    return [s for s in order if s in found] + subset_order(
        bench, [s for s in found if s not in order]
    )


def has_result(record: RunRecord, bench: str, task: str, metric: str) -> bool:
    """Whether `record` has a result of (bench, task, metric) on some subset."""
    return any((r.benchmark, r.task, r.metric) == (bench, task, metric) for r in record.results)


def render(
    layout: RunLayout, records: Sequence[RunRecord], labels: Mapping[str, str], ci: bool = False
) -> list[Table]:
    """The tables of `layout` for `records` (one per benchmark, or one)."""
    benches = benchmarks_of(records, layout.per_benchmark) if layout.per_benchmark else [""]
    out = []
    for bench in benches:
        rows = layout.rows(records, bench, labels)
        if not rows:
            continue
        columns = layout.columns(records, bench)
        title = f"{bench} — {layout.title}" if bench else layout.title
        table = fill(f"{title} ({layout.cite})", [*layout.lead, *(c.header for c in columns)],
                     columns, rows, ci, layout.fixed)  # fmt: skip
        if table.rows[len(layout.fixed) :]:
            table.notes.insert(0, layout.note.format(columns=[c.header for c in columns]))
            out.append(table)
    return out


def fill(
    title: str,
    headers: list[str],
    columns: Sequence[RunColumn],
    rows: Sequence[RunRow],
    ci: bool,
    fixed: Sequence[Sequence[str]] = (),
) -> Table:
    """The table of `rows` × `columns`, after the `fixed` rows; the ties per row and the
    coverage in the notes."""
    t = Table(title, headers, rows=[list(r) for r in fixed])
    ties: dict[str, tuple[int, str]] = {}
    partial = False
    for row in rows:
        values = []
        for col in columns:
            text, found = _value(row, col, ci)
            values.append(text)
            if found is None:
                continue
            run, r = found
            partial = partial or not r.complete
            if not r.subset.startswith("_") and r.ties:
                n, _ = ties.get(row.name, (0, ""))
                ties[row.name] = (n + r.ties, run.config.tie_policy)
        if any(values):
            t.rows.append([*row.lead, *values])
    if ties:
        parts = ", ".join(
            f"{lab} {n} (as {'hits' if pol == 'lenient' else 'failures'})"
            for lab, (n, pol) in ties.items()
        )
        t.notes.append(f"tied comparisons per row: {parts}")
    if partial:
        t.notes.append(COVERAGE)
    return t


def _value(
    row: RunRow, col: RunColumn, ci: bool
) -> tuple[str, tuple[RunRecord, MetricResult] | None]:
    """A cell's text and the (run, result) it shows (None: no result, or a mean of several)."""
    task, metric = col.task or row.task or "", col.metric or row.metric or ""
    if not col.mean_of:
        found = find_result(row.runs, col.benchmark, task, metric, col.subset)
        shown = None if found is None else found[1]
        return _cell(shown, ci, found is not None and answers_a_sample(found[0])), found
    where = (col.benchmark, task, metric)
    for run in row.runs:
        mine = [r for r in run.results if (r.benchmark, r.task, r.metric) == where]
        macro = [r for r in mine if r.subset == MACRO]
        if macro and {r.subset for r in mine if r.subset[0] != "_"} == set(col.mean_of):
            return _cell(macro[0], ci, answers_a_sample(run)), (run, macro[0])
    cells = [find_result(row.runs, col.benchmark, task, metric, s) for s in col.mean_of]
    if any(c is None for c in cells):
        return "", None
    values = [c[1].accuracy for c in cells if c is not None]
    return f"{sum(values) / len(values):.2f}", None

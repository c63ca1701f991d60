"""A paper table as a `lexsem sweep` grid.

The grid has one block per (benchmark, tasks) of the table, each crossing the rows that have
cells there with that one benchmark. Each row runs under the name the paper prints
(`EvalConfig.name`), so its run record says which row it is. Rows without a spec are not in the
grid (`lexsem.reproduce.availability` says what they need). The grid's jobs, their ids and the
executors that run them are the sweep's (`lexsem.sweep.grid.expand`, `lexsem.sweep.runner`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lexsem.report.paper.facts import ModelRow, PaperTable
from lexsem.sweep.grid import HARD_MAX_JOBS, Block, Grid, ModelEntry


def runnable_rows(table: PaperTable, only: Sequence[str] | None = None) -> list[ModelRow]:
    """The rows that have a spec (in table order), or those of them named in `only`."""
    rows = [r for r in table.rows if r.spec is not None]
    return [r for r in rows if only is None or r.name in only]


def table_grid(
    table: PaperTable, rows: Sequence[ModelRow], settings: Mapping[str, Any] | None = None
) -> Grid:
    """The sweep grid that runs `rows` of `table` on the benchmarks and tasks of their cells,
    with evaluation `settings` (EvalConfig fields) for every job."""
    blocks: dict[tuple[str, tuple[str, ...]], list[ModelEntry]] = {}
    for row in rows:
        assert row.spec is not None
        for bench, tasks in _needed(table, row.name).items():
            blocks.setdefault((bench, tasks), []).append(ModelEntry(spec=row.spec, name=row.name))
    return Grid(
        name=table.name,
        max_jobs=HARD_MAX_JOBS,
        defaults=dict(settings or {}),
        block=[
            Block(models=list(models), benchmarks=[bench], options={"tasks": list(tasks)})
            for (bench, tasks), models in blocks.items()
        ],
    )


def _needed(table: PaperTable, model: str) -> dict[str, tuple[str, ...]]:
    """benchmark -> the tasks a row's cells need there, in cell order."""
    out: dict[str, dict[str, None]] = {}
    for cell in table.cells_of(model):
        out.setdefault(cell.column.benchmark, {})[cell.column.task] = None
    return {b: tuple(tasks) for b, tasks in out.items()}

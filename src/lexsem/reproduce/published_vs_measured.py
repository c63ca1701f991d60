"""Published numbers beside lexsem's: one `Comparison` per cell of a table, holding the run
record's result for that cell, with the difference Δ = lexsem − published and whether the
published number lies outside the result's confidence interval (`ci_low`, `ci_high`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lexsem.report.paper.facts import Column, PaperTable, find_result
from lexsem.results.schema import MetricResult, RunRecord


@dataclass(frozen=True)
class Comparison:
    """One published cell and what lexsem made of it: the run's `result` for the cell.
    `status`: `compared` (a result was found), `not run` (`why` says what the row needs),
    `failed` (`why` is the error) or `no result` (the run has no such result; `why` says
    which)."""

    model: str
    spec: str | None
    column: Column
    published: float
    status: str
    result: MetricResult | None = None
    why: str | None = None

    @property
    def lexsem(self) -> float | None:
        """lexsem's number for the cell (the result's accuracy), None when not compared."""
        return None if self.result is None else self.result.accuracy

    @property
    def ci_low(self) -> float | None:
        return None if self.result is None else self.result.ci_low

    @property
    def ci_high(self) -> float | None:
        return None if self.result is None else self.result.ci_high

    @property
    def delta(self) -> float | None:
        return None if self.lexsem is None else self.lexsem - self.published

    @property
    def outside(self) -> bool | None:
        """Whether the published number lies outside the run's interval (None: no interval)."""
        return outside_ci(self.published, self.ci_low, self.ci_high)

    @property
    def as_printed(self) -> bool | None:
        """Whether lexsem's number, rounded to the paper's two decimals, is the published one."""
        return None if self.lexsem is None else round(self.lexsem, 2) == round(self.published, 2)


def outside_ci(published: float, ci_low: float | None, ci_high: float | None) -> bool | None:
    """True when `published` is outside [ci_low, ci_high]; None when the run has no interval."""
    if ci_low is None or ci_high is None:
        return None
    return not ci_low <= published <= ci_high


def compare(
    table: PaperTable,
    records: Mapping[str, Sequence[RunRecord]],
    not_run: Mapping[str, str],
    failed: Mapping[str, str] | None = None,
) -> list[Comparison]:
    """Every cell of `table`, in table order: compared with the row's run records (`records`:
    row name -> its runs), or said why not (`not_run`: row -> what it needs; `failed`: row ->
    the error of its run)."""
    failed = failed or {}
    out: list[Comparison] = []
    for cell in table.cells:
        row = table.row(cell.model)
        base = {
            "model": row.name,
            "spec": row.spec,
            "column": cell.column,
            "published": cell.published,
        }
        if row.name in not_run:
            out.append(Comparison(**base, status="not run", why=not_run[row.name]))
            continue
        c = cell.column
        found = find_result(records.get(row.name, ()), c.benchmark, c.task, c.metric, c.subset)
        if found is None:
            if row.name in failed:
                out.append(Comparison(**base, status="failed", why=failed[row.name]))
            else:
                why = f"no {c.benchmark} {c.task}/{c.metric} result on {c.subset}"
                out.append(Comparison(**base, status="no result", why=why))
            continue
        out.append(Comparison(**base, status="compared", result=found[1]))
    return out

"""Every table of a set of runs: the plain tables (`lexsem.report.tables.table_groups`), then the
papers' tables of generative runs (`lexsem.report.generative.paper_tables`)."""

from __future__ import annotations

from collections.abc import Sequence

from lexsem.report.generative import paper_tables
from lexsem.report.tables import Table, table_groups
from lexsem.results.schema import RunRecord

__all__ = ["build_tables"]


def build_tables(runs: Sequence[RunRecord], *, ci: bool = False) -> list[Table]:
    """The tables for a set of runs, in first-seen order of benchmark, task and metric
    (`table_groups`, flattened), then the papers' tables of generative runs, if any
    (`lexsem.report.generative.paper_tables`)."""
    return [t for g in table_groups(runs, ci=ci) for t in g.tables] + paper_tables(runs, ci=ci)

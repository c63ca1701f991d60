"""The papers' published numbers beside lexsem's. A published row is one cell of a paper's
table (`lexsem.report.paper.catalog.TABLES`, `lexsem.report.paper.facts`) for the model spec
that paper row stands for; the board shows it under the measured rows of its table, marked
"published", with Δ = measured − published where the same spec was measured, and `†` where no
k/n over the public items gives the number (`lexsem.reproduce.attainability.published_cells`,
the cells `lexsem reproduce` marks the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PublishedRow", "published_rows"]


@dataclass(frozen=True)
class PublishedRow:
    """One published cell: where it was published (`source`: a paper table's name), the model
    as the paper names it and the spec lexsem runs for it, the board cell it belongs to, the
    number (percent) and whether lexsem can attain it (None: not said)."""

    source: str
    model: str
    spec: str
    benchmark: str
    task: str
    metric: str
    subset: str
    accuracy: float
    attainable: bool | None = None


def published_rows() -> list[PublishedRow]:
    """Every published cell of the catalog's reproducible tables, with the spec its paper row
    runs as (empty where lexsem has none) and whether a k/n over the public items gives it."""
    from lexsem.report.paper.catalog import get_table
    from lexsem.reproduce.attainability import published_cells

    specs: dict[str, dict[str, str]] = {}
    out = []
    for c in published_cells():
        if c.table not in specs:
            specs[c.table] = {r.name: r.spec or "" for r in get_table(c.table).rows}
        out.append(PublishedRow(
            source=f"{c.paper}, {c.table_label}", model=c.model, spec=specs[c.table][c.model],
            benchmark=c.column.benchmark, task=c.column.task, metric=c.column.metric,
            subset=c.column.subset, accuracy=c.published, attainable=c.attainable,
        ))  # fmt: skip
    return out

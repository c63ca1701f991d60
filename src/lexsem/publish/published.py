"""The papers' published numbers beside lexsem's (the hook). A published row is one cell of a
paper's table (`lexsem.reproduce.catalog.TABLES`, `lexsem.report.paper.facts`) for the model
spec that paper row stands for; the board shows it under the measured rows of its table,
marked "published", with Δ = measured − published where the same spec was measured.

`published_rows` returns no row until the function listing the published cells and their
attainability (`lexsem.stats.attainable`, written beside `lexsem reproduce`) lands: then it
maps that function's cells to `PublishedRow`s, and nothing else here changes.
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
    """The published cells to show beside the measured ones: none yet (module doc)."""
    return []

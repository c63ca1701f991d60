"""Every published number of the built-in paper tables with the public items it is over and
whether some k/n gives it (`lexsem.report.paper.attainability`): for the commands that show the
`†` mark beside a published number, and for the counts in docs/fidelity.md."""

from __future__ import annotations

from collections.abc import Sequence

from lexsem.report.paper.attainability import PublishedCell, check_tables
from lexsem.report.paper.catalog import get_table, table_names

__all__ = ["PublishedCell", "published_cells"]


def published_cells(names: Sequence[str] | None = None) -> list[PublishedCell]:
    """The cells of the tables `names` (default: every table `lexsem reproduce` knows), in
    catalog and table order, each with its n and `attainable` (None: not checked, `why`)."""
    return check_tables(get_table(name) for name in (table_names() if names is None else names))

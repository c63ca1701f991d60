"""The built-in paper tables: name -> `PaperTable`, lazy entries (a table's module is imported
when it is first asked for)."""

from __future__ import annotations

from lexsem.registry import Registry
from lexsem.reproduce.facts import PaperTable


def _check(obj: object) -> PaperTable:
    if not isinstance(obj, PaperTable):
        raise TypeError(f"a paper-table entry must be a PaperTable, got {type(obj).__name__}")
    return obj


TABLES: Registry[PaperTable] = Registry("paper table", _check)
for _name in (
    "scpp_table2",
    "scpp_table16",
    "visla_generic",
    "visla_spatial",
    "bivlc_table2",
    "bivlc_table3",
    "sugarcrepe",
    "priors_table2",
):
    TABLES.add(_name, f"lexsem.reproduce.tables.{_name}:TABLE")


def get_table(name: str) -> PaperTable:
    return TABLES.get(name)


def table_names() -> list[str]:
    return TABLES.names()

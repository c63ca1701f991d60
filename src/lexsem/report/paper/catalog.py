"""The one catalog of the papers' tables: name -> entry, lazy entries declared here (a table's
module is imported when it is first asked for). An entry is either kind of paper table:

- a reproducible table (`PaperTable`: rows, specs and published numbers), which `lexsem
  reproduce` runs and sets beside the published numbers;
- a report layout (`RunLayout`: which runs make a table's rows and which results its columns),
  which the report fills with generative runs (`lexsem.report.generative`), in the order
  declared here.

`lexsem list tables` lists both, with their kind, paper and table. A new table is one module
under `lexsem.report.paper.tables` and one line here."""

from __future__ import annotations

from lexsem.errors import LexsemError
from lexsem.registry import Registry, did_you_mean
from lexsem.report.paper.facts import PaperTable
from lexsem.report.paper.layout import RunLayout

__all__ = [
    "REPORT_LAYOUT",
    "REPRODUCIBLE",
    "TABLES",
    "TableEntry",
    "describe",
    "get_table",
    "kind_of",
    "layouts",
    "table_names",
]

TableEntry = PaperTable | RunLayout

REPRODUCIBLE = "reproducible table"
REPORT_LAYOUT = "report layout"


def _check(obj: object) -> TableEntry:
    if not isinstance(obj, PaperTable | RunLayout):
        raise TypeError(f"a paper table registry entry must be a PaperTable or a RunLayout, got "
                        f"{type(obj).__name__}")  # fmt: skip
    return obj


_T = "lexsem.report.paper.tables"

TABLES: Registry[TableEntry] = Registry(
    "paper table",
    _check,
    {
        # reproducible tables: published numbers, run by `lexsem reproduce`
        "scpp_table2": f"{_T}.scpp_vlms:TABLE2",
        "scpp_table3": f"{_T}.scpp_vlms:TABLE3",
        "scpp_table4": f"{_T}.scpp_vlms:TABLE4",
        "scpp_table12": f"{_T}.scpp_vlms:TABLE12",
        "scpp_table16": f"{_T}.scpp_table16:TABLE",
        "scpp_table19": f"{_T}.scpp_table19:TABLE",
        "visla_generic": f"{_T}.visla:GENERIC",
        "visla_spatial": f"{_T}.visla:SPATIAL",
        "bivlc_table2": f"{_T}.bivlc:TABLE2",
        "bivlc_table3": f"{_T}.bivlc:TABLE3",
        "bivlc_table4": f"{_T}.bivlc:TABLE4",
        "bivlc_table5": f"{_T}.bivlc:TABLE5",
        "sugarcrepe": f"{_T}.sugarcrepe:TABLE",
        "priors_table2": f"{_T}.priors_table2:TABLE",
        # report layouts: generative runs laid out as the paper's table, in the report's order
        "scpp_table8_layout": f"{_T}.scpp_table8:LAYOUT",
        "scpp_table14_layout": f"{_T}.scpp_table14:LAYOUT",
        "scpp_table17_layout": f"{_T}.scpp_table17:LAYOUT",
        "scpp_table18_layout": f"{_T}.scpp_table18:LAYOUT",
        "scpp_table19_layout": f"{_T}.scpp_table19:LAYOUT",
        "bivlc_table2_layout": f"{_T}.bivlc_table2:LAYOUT",
    },
)


def kind_of(entry: TableEntry) -> str:
    """What an entry is: a reproducible table or a report layout."""
    return REPRODUCIBLE if isinstance(entry, PaperTable) else REPORT_LAYOUT


def describe(entry: TableEntry) -> tuple[str, str, str]:
    """(kind, the paper and table, what it holds), as `lexsem list tables` shows them."""
    if isinstance(entry, PaperTable):
        return REPRODUCIBLE, f"{entry.paper}, {entry.table}", entry.description
    return REPORT_LAYOUT, entry.cite, entry.title


def _names(kind: str) -> list[str]:
    return [n for n in TABLES.entries() if kind_of(TABLES.get(n)) == kind]


def table_names() -> list[str]:
    """The reproducible tables (`lexsem reproduce TABLE`), sorted."""
    return sorted(_names(REPRODUCIBLE))


def get_table(name: str) -> PaperTable:
    """The reproducible table `name`; a LexsemError naming the known ones otherwise (a report
    layout included: it has no published numbers to run beside)."""
    entry = TABLES.get(name) if name in TABLES else None
    if isinstance(entry, PaperTable):
        return entry
    known = table_names()
    what = (
        f"paper table {name!r} is a {REPORT_LAYOUT}, not a {REPRODUCIBLE}"
        if entry is not None
        else f"unknown paper table {name!r}{did_you_mean(name, known)}"
    )
    raise LexsemError(f"{what}; known: {', '.join(known)}")


def layouts() -> tuple[RunLayout, ...]:
    """The report layouts, in the order declared (the report's order)."""
    return tuple(e for n in TABLES.entries() if isinstance(e := TABLES.get(n), RunLayout))

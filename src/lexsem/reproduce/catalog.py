"""The built-in paper tables that `lexsem reproduce` runs: name -> `PaperTable`, lazy entries
declared here (a table's module is imported when it is first asked for). A new table is one
module under `lexsem.report.paper.tables` and one line here."""

from __future__ import annotations

from lexsem.registry import Registry
from lexsem.report.paper.facts import PaperTable

TABLES: Registry[PaperTable] = Registry(
    "paper table",
    PaperTable,
    {
        "scpp_table2": "lexsem.report.paper.tables.scpp_vlms:TABLE2",
        "scpp_table3": "lexsem.report.paper.tables.scpp_vlms:TABLE3",
        "scpp_table4": "lexsem.report.paper.tables.scpp_vlms:TABLE4",
        "scpp_table12": "lexsem.report.paper.tables.scpp_vlms:TABLE12",
        "scpp_table16": "lexsem.report.paper.tables.scpp_table16:TABLE",
        "scpp_table19": "lexsem.report.paper.tables.scpp_table19:TABLE",
        "visla_generic": "lexsem.report.paper.tables.visla:GENERIC",
        "visla_spatial": "lexsem.report.paper.tables.visla:SPATIAL",
        "bivlc_table2": "lexsem.report.paper.tables.bivlc:TABLE2",
        "bivlc_table3": "lexsem.report.paper.tables.bivlc:TABLE3",
        "bivlc_table4": "lexsem.report.paper.tables.bivlc:TABLE4",
        "bivlc_table5": "lexsem.report.paper.tables.bivlc:TABLE5",
        "sugarcrepe": "lexsem.report.paper.tables.sugarcrepe:TABLE",
        "priors_table2": "lexsem.report.paper.tables.priors_table2:TABLE",
    },
)


def get_table(name: str) -> PaperTable:
    return TABLES.get(name)


def table_names() -> list[str]:
    return TABLES.names()

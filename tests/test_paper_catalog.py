"""The one catalog of paper tables (`lexsem.report.paper.catalog`): reproducible tables and
report layouts are entries of one registry, listed together by `lexsem list tables` with their
kind, paper and table; names are unique across both kinds."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from lexsem.cli import app
from lexsem.errors import LexsemError
from lexsem.report.paper.catalog import (
    REPORT_LAYOUT,
    REPRODUCIBLE,
    TABLES,
    get_table,
    kind_of,
    layouts,
    table_names,
)
from lexsem.report.paper.facts import PaperTable
from lexsem.report.paper.layout import RunLayout
from lexsem.report.paper.tables import bivlc_table2, scpp_table8, scpp_table19

runner = CliRunner()


def test_list_tables_lists_both_kinds_once_each() -> None:
    out = runner.invoke(app, ["list", "tables"])
    assert out.exit_code == 0, out.output
    rows = [line.split(maxsplit=1) for line in out.output.splitlines() if line.strip()]
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)) == len(TABLES)  # unique across both kinds
    assert names == TABLES.names()
    kinds = {name: text.split("  ")[0].strip() for name, text in rows}
    assert set(kinds.values()) == {REPRODUCIBLE, REPORT_LAYOUT}
    assert kinds["scpp_table19"] == REPRODUCIBLE and kinds["scpp_table19_layout"] == REPORT_LAYOUT
    assert [n for n, k in kinds.items() if k == REPRODUCIBLE] == table_names()
    line = dict(rows)
    assert "Table 16:" in line["scpp_table16"]
    assert "SugarCrepe++ Table 8:" in line["scpp_table8_layout"]


def test_every_entry_is_one_of_the_two_kinds() -> None:
    for name in TABLES.names():
        entry = TABLES.get(name)
        assert isinstance(entry, PaperTable | RunLayout)
        if isinstance(entry, PaperTable):
            assert entry.name == name and kind_of(entry) == REPRODUCIBLE
        else:
            assert name.endswith("_layout") and kind_of(entry) == REPORT_LAYOUT


def test_layouts_in_the_reports_order() -> None:
    got = layouts()
    assert len(got) == 6
    assert got[0] is scpp_table8.LAYOUT and got[-2:] == (scpp_table19.LAYOUT, bivlc_table2.LAYOUT)


def test_a_layout_is_not_reproduced() -> None:
    assert get_table("scpp_table19") is scpp_table19.TABLE
    with pytest.raises(LexsemError, match="is a report layout, not a reproducible table"):
        get_table("scpp_table19_layout")
    with pytest.raises(LexsemError, match=r"unknown paper table 'scpp_tabel16'.*did you mean"):
        get_table("scpp_tabel16")

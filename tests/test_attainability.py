"""Published numbers that no k/n over the public items gives: each cell's n from the
benchmark's declared counts, the counts per table, and the `†` on `lexsem reproduce`'s
comparison (no model runs: the run records are built by hand)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from builders.run_records import record
from lexsem.benchmarks.load import load_benchmark
from lexsem.report.paper.attainability import (
    MARK,
    check_table,
    column_counts,
    printed_decimals,
    unattainable,
)
from lexsem.report.paper.catalog import get_table
from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.reproduce.attainability import published_cells
from lexsem.reproduce.published_vs_measured import compare
from lexsem.reproduce.render import to_csv_text, to_markdown_text
from lexsem.results.schema import MetricResult

SCPP = "sugarcrepe_pp"


def _itt(subset: str) -> Column:
    return Column(benchmark=SCPP, task="itt", metric="itt", subset=subset, header=subset)


def test_scpp_table2_clip_swap_object_itt_is_no_k_over_245() -> None:
    """45.18 over the 245 public swap_obj items: 110 → 44.90, 111 → 45.31. The same row's
    Replace Object ITT 86.80 is 1434/1652 = 86.803 (attainable)."""
    table = get_table("scpp_table2")
    by = {(c.model, c.column.header): c for c in check_table(table)}
    clip = by["CLIP", "Swap Object ITT"]
    assert (clip.published, clip.n, clip.decimals, clip.attainable) == (45.18, 245, 2, False)
    assert clip.subsets == "swap_obj 245"
    replace = by["CLIP", "Replace Object ITT"]
    assert (replace.n, replace.attainable) == (1652, True)


def test_each_kind_of_column_gets_its_n() -> None:
    """A subset: its items; `_micro` and a micro aggregate: the sum; `_macro`: the subsets'
    counts; VISLA spatial: the 640 rows left of 652; ARO's label macros: not known."""
    assert column_counts(_itt("swap_obj")) == ("items", (245,))
    assert column_counts(_itt("_micro")) == ("items", (245, 666, 1652, 788, 1406))
    assert column_counts(_itt("_macro")) == ("macro", (245, 666, 1652, 788, 1406))
    bivlc_swap = Column(benchmark="bivlc", task="bivlc", metric="group", subset="_swap", header="")
    assert column_counts(bivlc_swap) == ("items", (81, 278))
    sc_replace = Column(benchmark="sugarcrepe", task="pair", metric="acc", subset="_replace",
                        header="")  # fmt: skip
    assert column_counts(sc_replace) == ("macro", (1652, 788, 1406))
    spatial = Column(benchmark="visla_spatial", task="t2t", metric="t2t", subset="spatial",
                     header="")  # fmt: skip
    assert column_counts(spatial) == ("items", (640,))
    vg = Column(benchmark="aro_vg", task="aro_vg", metric="acc", subset="_vg_relation_macro",
                header="")  # fmt: skip
    assert isinstance(column_counts(vg), str)
    sc_swap = Column(benchmark="sugarcrepe", task="pair", metric="acc", subset="swap_obj",
                     header="")  # fmt: skip
    assert column_counts(sc_swap) == ("items", (245,))
    assert column_counts(sc_swap, paper=True) == ("items", (246,))


def test_a_table_prints_the_places_most_of_its_cells_have() -> None:
    """86.80 is stored as 86.8; BiVLC Table 4's one 9.263 is read at its own 3 places."""
    assert printed_decimals(get_table("scpp_table2")) == 2
    table4 = get_table("bivlc_table4")
    assert printed_decimals(table4) == 2
    (cell,) = [c for c in check_table(table4) if c.published == 9.263]
    assert cell.decimals == 3


def test_the_counts_per_table() -> None:
    """154 of the 345 cells of SugarCrepe++ Tables 2, 3, 4 and 12 (5) are no k/n over the
    public items; none of Tables 16 and 19's 230; ARO's 22 label macros are not checked."""
    counts = {
        name: Counter(c.attainable for c in check_table(get_table(name)))
        for name in ("scpp_table2", "scpp_table3", "scpp_table4", "scpp_table12",
                     "scpp_table16", "scpp_table19", "priors_table2")
    }  # fmt: skip
    assert [counts[n][False] for n in ("scpp_table2", "scpp_table3", "scpp_table4")] == [
        52, 11, 24,
    ]  # fmt: skip
    assert counts["scpp_table12"][False] == 67
    assert counts["scpp_table16"] == {True: 65} and counts["scpp_table19"] == {True: 165}
    assert counts["priors_table2"] == {True: 22, None: 22}
    every = published_cells()
    assert len(every) == 1195
    assert Counter(c.attainable for c in every) == {True: 977, False: 196, None: 22}


def test_sugarcrepe_swap_object_is_a_k_over_the_papers_246() -> None:
    """SugarCrepe's Swap Object numbers are counts over the paper's 246 items: 61.79 is
    152/246, and no k/245."""
    by = {(c.model, c.column.header): c for c in check_table(get_table("sugarcrepe"))}
    rn50 = by["RN50", "Swap Object"]
    assert (rn50.published, rn50.attainable, rn50.paper_ns, rn50.attainable_over_paper) == (
        61.79, False, (246,), True,
    )  # fmt: skip


def test_the_declared_counts_are_the_items_the_loaders_give(test_data_dir: Path) -> None:
    """The n of every file benchmark's column is what its loader gives from the public files."""
    for name in ("sugarcrepe_pp", "sugarcrepe", "visla_generic", "visla_spatial"):
        bench = load_benchmark(name, data_dir=test_data_dir)
        for sub in bench.subsets:
            column = Column(benchmark=name, task="", metric="", subset=sub.spec.name, header="")
            assert column_counts(column) == ("items", (len(sub.items),)), (name, sub.spec.name)


def _compared() -> tuple[PaperTable, str, str]:
    table = PaperTable(
        name="hand_made", paper="A paper", table="Table 1", description="d", included="all",
        rows=(ModelRow(name="M", spec="minilm"),),
        cells=cells([_itt("swap_obj"), _itt("swap_att")], {"M": (45.18, 44.89)}),
    )  # fmt: skip
    res = [
        MetricResult(benchmark=SCPP, task="itt", metric="itt", subset=s, n=n, hits=k,
                     ties=0, accuracy=100 * k / n, ci_low=None, ci_high=None)
        for s, n, k in (("swap_obj", 245, 110), ("swap_att", 666, 299))
    ]  # fmt: skip
    got = compare(table, {"M": [record("M", res)]}, {})
    return table, to_markdown_text(table, got), to_csv_text(table, got)


def test_the_comparison_marks_a_published_number_no_k_over_n_gives() -> None:
    """45.18 over 245 items is marked †; 44.89 over 666 is 299/666 = 44.895 (printed 44.89 or
    44.90: attainable), not marked; the legend names the n."""
    table, md, text = _compared()
    assert set(unattainable(table)) == {("M", _itt("swap_obj"))}
    lines = {line.split("|")[3].strip(): line for line in md.splitlines()
             if line.startswith("| M |")}  # fmt: skip
    assert f"| 45.18 {MARK} |" in lines["swap_obj"]
    assert "| 44.89 |" in lines["swap_att"] and MARK not in lines["swap_att"]
    assert (
        f"{MARK} no k/n over the public items gives this value at the paper's precision "
        "(n: swap_obj 245): no implementation can match it exactly"
    ) in md
    rows = {r["subset"]: r for r in csv.DictReader(text.splitlines())}
    assert (rows["swap_obj"]["n"], rows["swap_obj"]["attainable"]) == ("245", "false")
    assert (rows["swap_att"]["n"], rows["swap_att"]["attainable"]) == ("666", "true")


def test_no_legend_without_a_marked_cell() -> None:
    table = PaperTable(
        name="hand_made", paper="A paper", table="Table 1", description="d", included="all",
        rows=(ModelRow(name="M", spec="minilm"),),
        cells=cells([_itt("swap_obj")], {"M": (44.90,)}),
    )  # fmt: skip
    res = MetricResult(benchmark=SCPP, task="itt", metric="itt", subset="swap_obj", n=245,
                       hits=110, ties=0, accuracy=100 * 110 / 245, ci_low=None,
                       ci_high=None)  # fmt: skip
    md = to_markdown_text(table, compare(table, {"M": [record("M", [res])]}, {}))
    assert MARK not in md and "| 44.90 |" in md


@pytest.mark.parametrize("value", [45.18, 45.19, 45.2, 45.3])
def test_the_mark_follows_the_value(value: float) -> None:
    table = PaperTable(
        name="hand_made", paper="A paper", table="Table 1", description="d", included="all",
        rows=(ModelRow(name="M", spec="minilm"),),
        cells=cells([_itt("swap_obj")], {"M": (value,)}),
    )  # fmt: skip
    assert bool(unattainable(table)) is (value != 45.3)  # 45.31 = 111/245: 45.3 only at 1 place

"""The one cell builder of the papers' tables of runs (`lexsem.report.paper.layout`): columns
under the paper's names and in its order, each cell from the first of a row's runs with that
result, average columns, fixed rows, the notes on ties and coverage; and BiVLC Table 2 defined
once, its report layout in the columns that `lexsem reproduce` compares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from builders.run_records import record, result
from lexsem.report.paper.facts import find_result
from lexsem.report.paper.layout import (
    COVERAGE,
    RunColumn,
    RunLayout,
    RunRow,
    SubsetColumns,
    render,
)
from lexsem.report.paper.tables import bivlc, bivlc_table2
from lexsem.results.schema import RunRecord

SCPP = "sugarcrepe_pp"
NAMES = {"swap_obj": "Swap Object", "replace_rel": "Replace Relation"}


def _runs() -> list[RunRecord]:
    a = record("a", [result(SCPP, "tot", "tot", "swap_obj", 40.0),
                     result(SCPP, "tot", "tot", "replace_rel", 80.0),
                     result(SCPP, "tot", "tot", "swap_att", 55.0, ties=3)])  # fmt: skip
    b = record("b", [result(SCPP, "tot", "tot", "replace_rel", 70.0)])
    c = record("c", [result(SCPP, "itt", "itt", "swap_obj", 10.0)])  # no TOT: no row
    return [a, b, c]


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    return [RunRow((labels[r.run_id],), (r,), labels[r.run_id], "tot", "tot") for r in records]


LAYOUT = RunLayout(
    cite="A paper, Table 1",
    title="TOT per subset",
    lead=("model",),
    columns=SubsetColumns(("tot",), NAMES),
    rows=_rows,
    note="first column: {columns[0]}",
    per_benchmark=("tot",),
    fixed=(("Chance", "50.00", "50.00", "50.00"),),
)


def test_subset_columns_come_in_the_papers_order_under_its_names() -> None:
    runs = _runs()
    (t,) = render(LAYOUT, runs, {r.run_id: r.model.name for r in runs})
    assert t.title == f"{SCPP} — TOT per subset (A paper, Table 1)"
    # the paper's subsets first (its order, its names), then the others under lexsem's label
    assert t.headers == ["model", "Swap Object", "Replace Relation", "swap_att"]
    assert t.rows == [
        ["Chance", "50.00", "50.00", "50.00"],
        ["a", "40.00", "80.00", "55.00"],
        ["b", "", "70.00", ""],
    ]  # c has no TOT result: no row
    assert t.notes[0] == "first column: Swap Object"
    assert t.notes[1] == "tied comparisons per row: a 3 (as failures)"
    assert COVERAGE not in t.notes


def test_no_run_row_no_table_and_the_interval_with_ci() -> None:
    runs = _runs()
    labels = {r.run_id: r.model.name for r in runs}
    assert render(LAYOUT, [runs[2]], labels) == []
    (t,) = render(LAYOUT, runs[:1], labels, ci=True)
    assert t.rows[1] == ["a", "40.00 [35.0, 45.0]", "80.00 [75.0, 85.0]", "55.00 [50.0, 60.0]"]


def test_a_cell_comes_from_the_first_run_with_it_and_coverage_is_noted() -> None:
    partial = result(SCPP, "tot", "tot", "swap_obj", 60.0)
    partial.items_scored, partial.items_total = 5, 10
    first, second = record("p", [partial]), record("q", [result(SCPP, "tot", "tot", "swap_obj", 1)])
    cols = [RunColumn("S", SCPP, "swap_obj", "tot", "tot")]
    one = RunLayout("c", "t", ("m",), lambda rs, b: cols,
                    lambda rs, b, lab: [RunRow(("pq",), (first, second), "pq")], "n")  # fmt: skip
    (t,) = render(one, [first, second], {})
    assert t.title == "t (c)" and t.rows == [["pq", "60.00 (5/10)"]]
    assert t.notes == ["n", COVERAGE]
    assert find_result([second, first], SCPP, "tot", "tot", "swap_obj")[0] is second  # type: ignore[index]


def test_an_average_column_is_the_runs_macro_or_the_mean_of_its_subsets() -> None:
    subsets = ("swap_obj", "replace_rel")
    with_macro = record("m", [result(SCPP, "itt", "itt", "swap_obj", 40.0),
                              result(SCPP, "itt", "itt", "replace_rel", 80.0),
                              result(SCPP, "itt", "itt", "_macro", 61.0)])  # fmt: skip
    extra = record("x", [result(SCPP, "itt", "itt", "swap_obj", 40.0),
                         result(SCPP, "itt", "itt", "replace_rel", 70.0),
                         result(SCPP, "itt", "itt", "swap_att", 1.0),
                         result(SCPP, "itt", "itt", "_macro", 37.0)])  # fmt: skip
    missing = record("y", [result(SCPP, "itt", "itt", "swap_obj", 40.0)])
    cols = [RunColumn("Avg", SCPP, "_macro", "itt", "itt", mean_of=subsets)]
    layout = RunLayout("c", "t", ("m",), lambda rs, b: cols,
                       lambda rs, b, lab: [RunRow((r.model.name,), (r,), "") for r in rs], "n",
                       )  # fmt: skip
    (t,) = render(layout, [with_macro, extra, missing], {}, ci=True)
    # its macro (with its interval) when its subsets are exactly these; else their mean; a
    # subset missing: blank, and a row without any cell is left out
    assert t.rows == [["m", "61.00 [56.0, 66.0]"], ["x", "55.00"]]


def test_bivlc_table2_is_one_definition_for_report_and_reproduce() -> None:
    """The report's BiVLC Table 2 has the columns whose published numbers `lexsem reproduce`
    compares, and the table's Random row."""
    bench = "bivlc"
    main = [result(bench, "bivlc", m, "_micro", v)
            for m, v in (("i2t", 80.0), ("t2i", 70.0), ("group", 60.0))]  # fmt: skip
    gen = record("vqa", [result("sugarcrepe", "pair", "acc", "_micro", 90.0), *main])
    gen.model.fingerprint = {"backend": "vqa", "score": "vqa"}
    (t,) = render(bivlc_table2.LAYOUT, [gen], {gen.run_id: "xl"})
    published = bivlc.TABLE2.columns()
    assert t.headers == ["model", "method", *(c.header for c in published)]
    where = [(c.benchmark, c.task, c.metric, c.subset)
             for c in bivlc_table2.LAYOUT.columns([gen], bench)]  # fmt: skip
    assert where == [(c.benchmark, c.task, c.metric, c.subset) for c in published]
    assert t.rows == [
        ["Random", "chance", "50.00", "25.00", "25.00", "16.67"],
        ["xl", "VQAScore", "90.00", "80.00", "70.00", "60.00"],
    ]
    assert t.notes[0].startswith("BiVLC I2T, T2I, Group on all items; SugarCrepe: ")


def test_a_human_row_shows_n_beside_each_number() -> None:
    """A human study's run (`lexsem.results.samples`): every cell with its n (here 100 items,
    every item of the subset scored), as the papers print a human row beside the models."""
    runs = _runs()
    human = runs[1].model_copy(
        update={"model": runs[1].model.model_copy(update={"fingerprint": {"backend": "human"}})}
    )
    (t,) = render(LAYOUT, [runs[0], human], {runs[0].run_id: "a", human.run_id: "human"})
    assert t.rows[1] == ["a", "40.00", "80.00", "55.00"]
    assert t.rows[2] == ["human", "", "70.00 (n=100)", ""]

"""The built-in paper tables (`lexsem.report.paper.tables`, registered in
`lexsem.report.paper.catalog`) are well-formed facts: every cell names a benchmark, a task, a
metric and a subset (or aggregate row) that lexsem's registries know for that benchmark; every
spec parses to a known backend; every number is a percentage; and each table expands to jobs
that run the right tasks under the paper's row names."""

from __future__ import annotations

import pytest

from lexsem.benchmarks.catalog import get as get_benchmark
from lexsem.models.backend_registry import BACKENDS
from lexsem.models.spec import parse_model_spec
from lexsem.report.paper.catalog import get_table, table_names
from lexsem.report.paper.facts import Column, PaperTable
from lexsem.reproduce.grid import runnable_rows, table_grid
from lexsem.sweep.grid import expand
from lexsem.tasks.blind import NAME as BLIND
from lexsem.tasks.catalog import get_task
from lexsem.tasks.multi import MACRO_PAPER, MICRO

TABLES = [
    "bivlc_table2",
    "bivlc_table3",
    "bivlc_table4",
    "bivlc_table5",
    "priors_table2",
    "scpp_table12",
    "scpp_table16",
    "scpp_table19",
    "scpp_table2",
    "scpp_table3",
    "scpp_table4",
    "sugarcrepe",
    "visla_generic",
    "visla_spatial",
]


def _rows_of_results(benchmark: str) -> set[str]:
    """Every subset name a run of `benchmark` can record: its subsets, `_micro`, `_macro`, its
    aggregate groups (`_replace`) and ARO's labelled VG rows (`_vg_relation_macro`)."""
    bench = get_benchmark(benchmark)
    names = {s.name for s in bench.subsets} | {"_micro", "_macro"}
    names |= {f"_{g.name}" for g in bench.aggregates}
    if bench.name == "aro_vg":
        names |= {f"_{s.name}_{kind}" for s in bench.subsets for kind in (MACRO_PAPER, MICRO)}
    return names


def _check_column(col: Column) -> None:
    bench = get_benchmark(col.benchmark)
    if col.task == BLIND:
        assert bench.item_kind != "quad", f"{col}: no blind task on quad items"
        assert col.metric == BLIND, col
    else:
        assert col.task in bench.tasks, f"{col}: {col.benchmark} has tasks {bench.tasks}"
        assert col.metric in get_task(col.task).metrics, col
    assert col.subset in _rows_of_results(col.benchmark), col


def test_every_table_is_listed() -> None:
    assert table_names() == TABLES


@pytest.mark.parametrize("name", TABLES)
def test_table_cells_are_known_to_lexsem(name: str) -> None:
    table = get_table(name)
    assert isinstance(table, PaperTable) and table.name == name
    assert table.paper and table.table and table.included
    for col in table.columns():
        _check_column(col)
    seen = set()
    for cell in table.cells:
        assert 0.0 <= cell.published <= 100.0, cell
        key = (cell.model, cell.column.benchmark, cell.column.task, cell.column.metric,
               cell.column.subset)  # fmt: skip
        assert key not in seen, f"{name}: cell given twice: {key}"
        seen.add(key)
    for row in table.rows:
        assert table.cells_of(row.name), f"{name}: row {row.name!r} has no cell"
        if row.spec is not None:
            assert parse_model_spec(row.spec).backend in BACKENDS, row
        else:
            assert row.needs, row


@pytest.mark.parametrize("name", TABLES)
def test_table_expands_to_one_job_per_row_and_benchmark(name: str) -> None:
    table = get_table(name)
    rows = runnable_rows(table)
    if not rows:  # no row has a spec (BiVLC Table 5's detectors): every one says what it needs
        assert all(r.spec is None and r.needs for r in table.rows)
        return
    jobs = expand(table_grid(table, rows, {"n_boot": 10}))
    wanted = {(r.name, c.column.benchmark) for r in rows for c in table.cells_of(r.name)}
    assert {(j.config.name, j.config.benchmarks[0]) for j in jobs} == wanted
    for job in jobs:
        row = table.row(job.config.name or "")
        assert job.model == row.spec and job.config.n_boot == 10
        tasks = {c.column.task for c in table.cells_of(row.name)
                 if c.column.benchmark == job.config.benchmarks[0]}  # fmt: skip
        assert set(job.config.tasks or ()) == tasks
    assert len({j.id for j in jobs}) == len(jobs)
    # ids are the same every time (spec and settings), and differ with the settings
    again = expand(table_grid(table, rows, {"n_boot": 10}))
    assert [j.id for j in again] == [j.id for j in jobs]
    other = expand(table_grid(table, rows, {"n_boot": 11}))
    assert not {j.id for j in other} & {j.id for j in jobs}


def test_the_published_minilm_numbers_are_the_spec_ones() -> None:
    """SugarCrepe++ Table 16 and VISLA Tables 2-3 as the papers print them for MiniLM."""
    t16 = {c.column.subset: c.published for c in get_table("scpp_table16").cells_of(
        "All-MiniLM-L6-v2")}  # fmt: skip
    assert t16 == {"swap_obj": 14.29, "swap_att": 22.52, "replace_obj": 93.95,
                   "replace_att": 64.97, "replace_rel": 63.94}  # fmt: skip
    visla = {c.column.metric: c.published for c in get_table("visla_generic").cells_of(
        "All-MiniLM-L6-v2")}  # fmt: skip
    assert visla == {"t2t": 58.89, "p1n": 93.22, "p2n": 60.12}


@pytest.mark.parametrize(
    "column",
    [
        Column(benchmark="sugarcrepe_pp", task="tot", metric="tot", subset="add_obj", header="x"),
        Column(benchmark="sugarcrepe_pp", task="tot", metric="i2t", subset="swap_obj", header="x"),
        Column(benchmark="visla_generic", task="pair", metric="acc", subset="generic", header="x"),
        Column(benchmark="bivlc", task=BLIND, metric=BLIND, subset="_micro", header="x"),
    ],
)
def test_a_cell_lexsem_cannot_record_is_caught(column: Column) -> None:
    with pytest.raises(AssertionError):
        _check_column(column)


def test_an_open_clip_model_has_one_spec_under_each_papers_name() -> None:
    """SugarCrepe, SugarCrepe++ and VISLA print the same open_clip models under their own names
    (`RN50x4`, `RN50×4`; `ViT-H-14`, `ViT-H/14`); each row runs SugarCrepe's tag for it."""
    from lexsem.report.paper.tables.openclip_models import openclip_rows

    sc, scpp, visla = (get_table(t) for t in ("sugarcrepe", "scpp_table12", "visla_generic"))
    for ours, theirs in (("RN50x4", "RN50×4"), ("ViT-H-14", "ViT-H/14"),
                         ("xlm-roberta-base-ViT-B-32", "xlm-RoBERTa-base-ViT-B/32")):  # fmt: skip
        spec = sc.row(ours).spec
        assert spec is not None and spec.startswith("openclip:"), spec
        assert scpp.row(theirs).spec == visla.row(ours).spec == spec
    (row,) = openclip_rows("ViT-g/14", note="n")
    assert (row.spec, row.note) == ("openclip:ViT-g-14/laion2b_s12b_b42k", "n")
    with pytest.raises(KeyError):
        openclip_rows("CLIP-ViT-L/14")  # SugarCrepe++'s name only

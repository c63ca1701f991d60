"""Tables a researcher reads: a run is a row only where it has results, a run given twice is one
row, ties are counted per model, titles do not repeat themselves, BiVLC and Winoground share one
table with every metric in the papers' order; `compare` says what it skipped and why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lexsem
from builders.fakes import BagOfWordsEncoder, OtherDual, TinyDualEncoder
from builders.length_scorers import CharLengthScorer
from builders.report_pages import parse
from builders.run_records import BIVLC_METRICS, bivlc_results, record, result, winoground_results
from lexsem.cli import app
from lexsem.report.all_tables import build_tables
from lexsem.report.html import render_html, runs_overview_sections
from lexsem.report.tables import to_markdown
from lexsem.results.schema import (
    MetricResult,
)

BIVLC_ORDER = ["I2T", "T2I", "Group", "Ipos2T", "Ineg2T", "Tpos2I", "Tneg2I"]


def triplet_results(task: str, acc: float, ties: int = 0) -> list[MetricResult]:
    subsets = {"swap_obj": ties, "swap_att": 0, "_micro": ties, "_macro": ties}
    return [result("synthetic", task, task, s, acc, t) for s, t in subsets.items()]


# -- quad benchmarks ---------------------------------------------------------------------------


def test_bivlc_and_winoground_share_one_table_with_every_metric() -> None:
    clip = record("clip", bivlc_results(50.0) + winoground_results(20.0))
    other = record("other", winoground_results(30.0))  # no BiVLC results: not a BiVLC row
    tables = build_tables([clip, other])
    quad = tables[0]
    assert quad.title == "bivlc and winoground — all metrics, all items and per type"
    types = [f"bivlc {t} {m}" for t in ("REPLACE", "SWAP") for m in ("I2T", "T2I", "Group")]
    assert quad.headers == [
        "model", *(f"bivlc {h}" for h in BIVLC_ORDER), *types,
        "winoground Text", "winoground Image", "winoground Group",
    ]  # fmt: skip
    by_model = {row[0]: row for row in quad.rows}
    # micro (all items) of each BiVLC metric, in the order of BiVLC Table 3: _micro is index 4
    want = [f"{50.0 + BIVLC_METRICS.index(m) + 0.4:.2f}" for m in BIVLC_METRICS]
    assert by_model["clip"][1:8] == want
    assert by_model["clip"][8] == "50.20"  # REPLACE I2T: the `_replace` aggregate of i2t
    assert by_model["other"][1:-3] == [""] * 13 and by_model["other"][-3:] == [
        "31.00", "32.00", "30.00",
    ]  # fmt: skip
    assert any("BiVLC" in n and "Tables 3-4" in n for n in quad.notes)
    # then per-subtype tables of the three main scores only (not seven tables per metric)
    rest = [t.title for t in tables[1:]]
    assert rest == ["bivlc: I2T", "bivlc: T2I", "bivlc: Group"]  # the papers' order
    assert all(row[0] == "clip" for t in tables[1:] for row in t.rows)


# -- rows, titles, ties --------------------------------------------------------------------------


def test_a_run_is_a_row_only_of_the_tables_it_has_results_in() -> None:
    text = record("text-encoder", triplet_results("tot", 40.0))
    dual = record("dual", triplet_results("tot", 45.0) + triplet_results("itt", 70.0))
    tables = {t.title: t for t in build_tables([text, dual])}
    assert [r[0] for r in tables["synthetic — TOT"].rows] == ["text-encoder", "dual"]
    assert [r[0] for r in tables["synthetic — ITT"].rows] == ["dual"]


def test_the_same_run_given_twice_is_one_row() -> None:
    run = record("minilm", triplet_results("tot", 40.0, ties=2))
    (table,) = build_tables([run, run, run])
    assert [r[0] for r in table.rows] == ["minilm"]
    assert table.notes == ["tied item-metric comparisons per model (counted as failures): minilm 2"]
    page = parse(render_html("r", runs_overview_sections([run, run]), {}))
    runs_table = next(t for t in page.tables if t["caption"].endswith("Runs"))
    assert len(runs_table["rows"]) == 1
    assert runs_table["rows"][0][-1] == "2026-01-01 00:00"  # every header has its cell


def test_the_runs_table_shows_the_creation_time_to_the_minute_in_utc() -> None:
    from lexsem.report.html import _when

    assert _when("2026-11-25T03:41:36+00:00") == "2026-11-25 03:41 UTC"
    assert _when("2026-11-25T05:41:36+02:00") == "2026-11-25 03:41 UTC"
    assert _when("2026-01-01T00:00:00") == "2026-01-01 00:00"  # no zone: none is claimed
    assert _when("yesterday") == "yesterday"


def test_tie_counts_are_per_model() -> None:
    a = record("a", triplet_results("tot", 40.0, ties=3))
    b = record("b", triplet_results("tot", 50.0, ties=1), tie_policy="lenient")
    c = record("c", triplet_results("tot", 60.0))
    (table,) = build_tables([a, b, c])
    assert table.notes == [
        "tied item-metric comparisons per model: a 3 (as failures), b 1 (as hits), "
        "c 0 (as failures)"
    ]
    (same,) = build_tables([a, c])
    assert same.notes == ["tied item-metric comparisons per model (counted as failures): a 3, c 0"]
    (none,) = build_tables([c])
    assert none.notes == []


def test_titles_and_headers_do_not_repeat_themselves() -> None:
    md = to_markdown(build_tables([record("m", triplet_results("tot", 40.0))]))
    assert "### synthetic — TOT\n" in md and "TOT: TOT" not in md
    aro = record("m", [result("aro_vg", "aro_vg", "acc", s, 60.0) for s in ("vg_r", "vg_a")])
    (t,) = build_tables([aro])
    assert t.title == "aro_vg: acc"
    wino = build_tables([record("m", winoground_results(20.0))])
    assert [t.title for t in wino] == ["winoground — all metrics, all items"]
    assert wino[0].headers == ["model", "Text", "Image", "Group"]
    titles = [t.title for t in build_tables([record("m", bivlc_results(50.0))])]
    assert not any(re.search(r"(\w+)\W+\1\b", t, re.I) for t in titles), titles


def test_html_keeps_the_model_column_in_view_and_wraps_intervals() -> None:
    long_name = "clip:/home/me/" + "checkpoints/" * 10 + "final"
    run = record(long_name, bivlc_results(50.0))
    page = render_html("r", runs_overview_sections([run]), {})
    css = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert re.search(r"tr>:first-child\{position:sticky;left:0;[^}]*max-width:16em", css)
    assert "overflow-wrap:anywhere" in css and ".table-wrap{overflow-x:auto" in css
    assert '<span class="v">50.40</span> <span class="ci">[45.4, 55.4]</span>' in page
    doc = parse(page)
    assert doc.tables[0]["rows"][0][1] == "50.40 [45.4, 55.4]"  # the text is unchanged


# -- compare -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compare_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("compare")
    common = {"n_boot": 0, "cache_dir": base / "cache", "offline": True}
    jobs = {
        "dual": (TinyDualEncoder(), ["synthetic", "synthetic_bi"]),
        "other": (OtherDual(), ["synthetic", "synthetic_bi"]),
        "bow": (BagOfWordsEncoder(32, "bow"), ["synthetic"]),
        "blind": (CharLengthScorer(), ["synthetic"]),
    }
    for key, (model, benches) in jobs.items():
        lexsem.evaluate(model, benches, out=base / key, **common)
    return {k: base / k for k in jobs}


def _compare(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["compare", *args])
    return res.exit_code, " ".join(res.output.split())


def test_compare_metric_skips_benchmarks_without_it_and_says_so(
    compare_runs: dict[str, Path],
) -> None:
    code, out = _compare(str(compare_runs["dual"]), str(compare_runs["other"]), "--metric", "tot")
    assert code == 0, out
    assert "| synthetic | tot | 500 |" in out and "| synthetic_bi |" not in out
    assert "skipped synthetic_bi: no metric 'tot' (A has group, i2t, ineg2t, ipos2t, t2i, " in out


def test_compare_without_a_common_metric_says_why_instead_of_an_empty_table(
    compare_runs: dict[str, Path],
) -> None:
    code, out = _compare(str(compare_runs["dual"]), str(compare_runs["blind"]))
    assert code == 2, out
    assert "| benchmark |" not in out
    assert (
        "nothing to compare: synthetic: no metric in common (A: itt, tot; B: none, a blind run: "
        "no model metric)"
    ) in out
    code, out = _compare(str(compare_runs["bow"]), str(compare_runs["dual"]), "--metric", "itt")
    assert code == 2 and "nothing to compare: synthetic: no metric 'itt' (A has tot)" in out
    code, out = _compare(str(compare_runs["bow"]), str(compare_runs["dual"]), "-b", "nope")
    assert code == 2 and "nope: not in run A nor B" in out
    code, out = _compare(str(compare_runs["bow"]), str(compare_runs["dual"]), "-b", "synthetc")
    assert code == 2 and "synthetc: not in run A nor B (did you mean 'synthetic'?)" in out
    code, out = _compare(str(compare_runs["bow"]), str(compare_runs["dual"]), "-b", "synthetic_bi")
    assert "synthetic_bi: not in run A" in out and "did you mean" not in out  # a real name


def test_compare_of_a_run_with_itself_notes_it(compare_runs: dict[str, Path]) -> None:
    res = CliRunner().invoke(app, ["compare", str(compare_runs["bow"]), str(compare_runs["bow"])])
    assert res.exit_code == 0, res.output
    assert "hold the same run" in res.stderr and "| synthetic | tot | 500 |" in res.stdout


def test_report_of_a_run_given_twice_notes_it(compare_runs: dict[str, Path]) -> None:
    res = CliRunner().invoke(app, ["report", str(compare_runs["bow"]), str(compare_runs["bow"])])
    assert res.exit_code == 0, res.output
    assert res.stdout.count("| bow |") == 1
    assert "holds the same run as" in res.stderr and "shown once" in res.stderr


def test_subset_columns_follow_the_benchmark_not_the_first_run() -> None:
    """A run of one subset given first put that subset first (and the others after it)."""
    one = record("one", [result("synthetic", "tot", "tot", "swap_obj", 40.0)])
    full = record(
        "full",
        [
            result("synthetic", "tot", "tot", s, 50.0)
            for s in ("replace_att", "swap_att", "swap_obj", "_micro", "_macro")
        ],
    )
    for runs in ([one, full], [full, one]):
        (table,) = build_tables(runs)
        assert table.headers == ["model", "replace_att", "swap_att", "swap_obj", "micro", "macro"]
    from lexsem.report.tables import subset_order

    assert subset_order("my-own", ["b", "_micro", "a"]) == ["a", "b", "_micro"]

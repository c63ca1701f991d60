"""The HTML report, its figures and the LaTeX tables."""

from __future__ import annotations

import base64
import csv
import io
import re
import sys

import numpy as np
import pytest

import lexsem
from builders.fakes import BagOfWordsEncoder
from builders.report_pages import parse, png_size
from lexsem.report import plots
from lexsem.report.all_tables import build_tables
from lexsem.report.html import Section, render_html, runs_metadata, runs_overview_sections
from lexsem.report.tables import (
    Table,
    aggregate_header,
    aggregate_labels,
    to_csv,
    to_latex,
    to_markdown,
)
from lexsem.results.schema import (
    BenchmarkInfo,
    Config,
    FileInfo,
    MetricResult,
    ModelInfo,
    RunRecord,
    Timings,
)

EVIL = 'bow <script>alert("x")</script> & co'


def titles(sections: list[Section]) -> list[str]:
    out = []
    for s in sections:
        out += [s.title, *titles(s.subsections)]
    return out


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunRecord]:
    base = tmp_path_factory.mktemp("report-runs")
    recs = []
    for dim, name in ((32, "bow32"), (64, EVIL)):
        run = lexsem.evaluate(
            BagOfWordsEncoder(dim, name),
            ["synthetic"],
            n_boot=100,
            out=base / name[:5],
            cache_dir=base / "cache",
            offline=True,
        )
        recs.append(run.record)
    return recs


@pytest.fixture(scope="module")
def heat() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    m = rng.uniform(0, 100, (10, 10))
    m[rng.random((10, 10)) < 0.3] = np.nan
    counts = np.where(np.isnan(m), 0, rng.integers(1, 500, (10, 10)))
    return m, counts


@pytest.fixture(scope="module")
def page(runs: list[RunRecord], heat) -> tuple[str, list[Section]]:
    m, counts = heat
    extra = Section(
        "Priors <&> 50% _x_",
        "First paragraph with <b>markup</b> & an ampersand.\n\n- one\n- two",
        figures=[
            (
                "Prior map <i>",
                plots.heatmap(m, np.linspace(0, 1, 11), np.linspace(-5, 5, 11), counts),
            )
        ],
        subsections=[Section("Same"), Section("Same")],  # duplicate titles, distinct anchors
    )
    sections = [*runs_overview_sections(runs), extra]
    return render_html("lexsem <report>", sections, runs_metadata(runs)), sections


# --- the HTML page ----------------------------------------------------------------------------


def test_html_is_well_formed_and_self_contained(page) -> None:
    html, _ = page
    assert html.startswith("<!DOCTYPE html>")
    p = parse(html)
    assert p.starts.count("html") == p.starts.count("body") == 1
    assert "script" not in p.starts and "link" not in p.starts and "iframe" not in p.starts
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # nothing external
    assert "Content-Security-Policy" in html


def test_toc_lists_every_section_with_working_anchors(page) -> None:
    html, sections = page
    p = parse(html)
    all_titles = titles(sections)
    assert len(p.toc_links) == len(all_titles) + 1  # + the metadata block
    assert all(h.startswith("#") and h[1:] in p.ids for h in p.toc_links)
    assert len(set(p.toc_links)) == len(p.toc_links)
    headings = p.headings
    assert headings[0] == "lexsem <report>"
    for t in [*all_titles, "Metadata"]:
        assert any(h.endswith(t) for h in headings), t
    assert "Results" in all_titles and "Runs" in all_titles


def test_images_are_embedded_pngs(page) -> None:
    html, _ = page
    p = parse(html)
    assert len(p.imgs) == 2  # the synthetic TOT bars (5 subsets) and the heat map
    for img in p.imgs:
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,")
        w, h = png_size(base64.b64decode(src.split(",", 1)[1], validate=True))
        assert w > 0 and h > 0
        assert img.get("alt")
    assert "figcaption" in p.starts


def test_tables_hold_the_paper_tables_and_runs(page, runs) -> None:
    html, sections = page
    p = parse(html)
    expected = build_tables(runs, ci=True)
    results = sections[0]
    assert [t for s in results.subsections for t in s.tables] == expected
    assert len(p.tables) == len(expected) + 2  # + runs and data files
    for got, want in zip(p.tables, expected, strict=False):
        assert got["caption"].endswith(want.title)
        assert got["rows"] == want.rows  # escaped on the way out, equal once parsed
        assert len(got["rows"]) == len(runs)
    by_caption = {t["caption"].split(". ", 1)[1]: t for t in p.tables}
    assert len(by_caption["Runs"]["rows"]) == len(runs)
    assert len(by_caption["Data files"]["rows"]) == 5  # one sha per synthetic subset
    assert "[" in expected[0].rows[0][1]  # CIs shown


def test_metadata_and_escaping(page, runs) -> None:
    html, _ = page
    for r in runs:
        assert r.run_id in html
        assert r.model.fingerprint_key in html
        assert r.benchmarks[0].files[0].sha256 in html
    assert '"backend": "test-bow"' in html.replace("&quot;", '"')
    assert "<script>" not in html and "</script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in html
    assert "<b>markup</b>" not in html and "&lt;b&gt;markup&lt;/b&gt;" in html
    assert "<title>lexsem &lt;report&gt;</title>" in html


def test_render_html_edge_cases() -> None:
    assert Section("a").tables is not Section("b").tables  # no shared mutable defaults
    t = Table("empty", ["model", "x"])
    html = render_html("t", [Section("only", tables=[t])], {})
    p = parse(html)
    assert len(p.tables) == 1 and p.tables[0]["rows"] == []
    assert "metadata" not in p.ids
    assert parse(render_html("none", [], None)).toc_links == []


def test_overview_without_matplotlib(runs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    sections = runs_overview_sections(runs)
    assert not any(s.figures for s in sections[0].subsections)
    assert "matplotlib" in sections[0].text
    assert [t for s in sections[0].subsections for t in s.tables] == build_tables(runs, ci=True)


# --- plots ------------------------------------------------------------------------------------


def _all_plots(heat) -> dict[str, bytes]:
    m, counts = heat
    rng = np.random.default_rng(1)
    labels = ["swap_obj", "swap_att", "micro"]
    return {
        "bars": plots.accuracy_bars(
            labels,
            {"a $x_1$": [10.0, 20.0, 15.0], EVIL: [50.0, None, 40.0]},
            {"a $x_1$": [5.0, 12.0, 11.0], EVIL: [40.0, None, 35.0]},
            {"a $x_1$": [16.0, 28.0, 19.0], EVIL: [60.0, None, 45.0]},
            "TOT",
            chance=100 / 3,
        ),
        "bars_single": plots.accuracy_bars(["a", "b"], [1.0, 2.0], None, None, "one"),
        "heatmap": plots.heatmap(m, np.linspace(0, 1, 11), np.linspace(0, 1, 11), counts, "p"),
        "heatmap_all_nan": plots.heatmap(np.full((3, 4), np.nan), range(5), range(4)),
        "hist": plots.histograms(
            {"gap": rng.normal(0, 0.1, 300), "other": [np.nan, 0.1, 0.2]}, "gaps", "gap"
        ),
        "hist_grid": plots.histograms(
            {k: rng.integers(0, 30, 100) for k in "abcd"}, "edit distance", "chars", vline=None
        ),
        "hist_empty": plots.histograms({"none": []}, "empty", "x"),
        "box": plots.box_plots(
            {"P1-P2": rng.normal(0.8, 0.1, 100), "P1-N": rng.normal(0.7, 0.1, 100), "e": []},
            "SLS",
            "similarity",
        ),
        "scatter": plots.rank_scatter(
            [1, 2, 3, 4], [2, 1, 4, 3], ["m1", "m2", "m3", "m_4$"], "ranks", "A", "B"
        ),
        "scatter_two": plots.rank_scatter([50.0, 60.0], [55.0, None], ["a", "b"], "t", "x", "y"),
    }


def test_plots_are_deterministic_pngs(heat) -> None:
    first, second = _all_plots(heat), _all_plots(heat)
    for name, data in first.items():
        w, h = png_size(data)
        assert w > 100 and h > 100, name
        assert data == second[name], f"{name} is not deterministic"
    assert b"Software" not in first["bars"] and b"tIME" not in first["bars"]


def test_plot_input_errors(heat) -> None:
    m, _ = heat
    with pytest.raises(ValueError, match="edges"):
        plots.heatmap(m, np.linspace(0, 1, 10), np.linspace(0, 1, 11))
    with pytest.raises(ValueError, match="values"):
        plots.accuracy_bars(["a", "b"], [1.0], None, None, "t")
    with pytest.raises(ValueError, match="length"):
        plots.rank_scatter([1, 2], [1], ["a", "b"], "t", "x", "y")


# --- LaTeX ------------------------------------------------------------------------------------


def test_to_latex(runs) -> None:
    tables = [
        Table("swap_obj 5% & more", ["model", "acc_1"], [["m_1 #2", "50%"]], ["{x} ~ ^ $ \\"]),
        *build_tables(runs, ci=True),
    ]
    tex = to_latex(tables)
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == len(tables)
    assert tex.count(r"\caption{") == len(tables) and r"\toprule" in tex
    assert r"\caption{swap\_obj 5\% \& more}" in tex
    assert r"m\_1 \#2 & 50\% \\" in tex
    assert r"\{x\} \textasciitilde{} \textasciicircum{} \$ \textbackslash{}" in tex
    assert r"\begin{tabular}{lr}" in tex
    assert r"\textless{}script\textgreater{}" in tex  # the model name with a <script>
    assert not re.search(r"(?<!\\)[_%#$]", tex)  # every special escaped


# --- labelled extra aggregates ----------------------------------------------------------------

VGR_PAPER = "VG-Relation: macro over relations, symmetric relations removed (paper preset)"
VGR_MICRO = "VG-Relation: micro average over all items"


def _result(subset: str, acc: float, ties: int = 0, label: str | None = None) -> MetricResult:
    return MetricResult(
        benchmark="aro_vg", task="aro_vg", metric="acc", subset=subset, n=100, hits=int(acc),
        ties=ties, accuracy=acc, ci_low=acc - 5, ci_high=acc + 5, label=label,
    )  # fmt: skip


def _record(results: list[MetricResult], name: str = "aro-model") -> RunRecord:
    """A hand-built run record of the ARO VG benchmark with the given results."""
    return RunRecord(
        lexsem_version="0.0.test", run_id=f"{name}-0123456789", created_at="2026-01-01T00:00:00",
        model=ModelInfo(spec=f"test:{name}", name=name, fingerprint={"backend": "test"},
                        fingerprint_key="f" * 64, batch_size=8),
        benchmarks=[BenchmarkInfo(
            name="aro_vg", subsets=["vg_relation", "vg_attribution"],
            items={"vg_relation": 100, "vg_attribution": 100},
            files=[FileInfo(subset=s, file=None, sha256="0" * 64)
                   for s in ("vg_relation", "vg_attribution")],
        )],
        config=Config(tasks=["aro_vg"], tie_policy="strict", seed=0, n_boot=100, confidence=0.95),
        results=results,
        timings=Timings(total_s=1.0, load_data_s=0.1, encode_s=0.5, cache_s=0.0, metrics_s=0.1,
                        n_texts_unique=0, n_texts_cached=0, n_texts_encoded=0),
    )  # fmt: skip


@pytest.fixture(scope="module")
def labelled_run() -> RunRecord:
    """A run record with ARO results: two subsets, micro/macro, two labelled aggregates and an
    unlabelled one (as SugarCrepe's `_replace`)."""
    results = [
        _result("vg_relation", 60.0, ties=2),
        _result("vg_attribution", 70.0, ties=1),
        _result("_micro", 65.0, ties=3),
        _result("_macro", 65.0, ties=3),
        _result("_vg_relation_macro", 55.5, ties=2, label=VGR_PAPER),
        _result("_vg_relation_micro", 60.0, ties=2, label=VGR_MICRO),
        _result("_group", 61.0, ties=3),
    ]
    return _record(results)


def test_labelled_aggregates_get_readable_headers_and_footnotes(labelled_run) -> None:
    (t,) = build_tables([labelled_run])
    assert t.headers == [
        "model", "vg_relation", "vg_attribution", "micro", "macro",
        "vg_relation macro", "vg_relation micro", "_group",
    ]  # fmt: skip
    assert t.column_labels == {5: VGR_PAPER, 6: VGR_MICRO}
    assert t.rows == [[labelled_run.model.name, "60.00", "70.00", "65.00", "65.00", "55.50",
                       "60.00", "61.00"]]  # fmt: skip
    # a tied item counts once: the aggregates repeat the subsets' ties
    assert t.notes == ["tied item-metric comparisons per model (counted as failures): aro-model 3"]

    md = to_markdown([t])
    assert (
        "| model | vg_relation | vg_attribution | micro | macro | vg_relation macro [1] "
        "| vg_relation micro [2] | _group |"
    ) in md
    assert f"_[1] {VGR_PAPER}_" in md and f"_[2] {VGR_MICRO}_" in md
    assert md.index("[1] VG-Relation") < md.index("aro-model 3")

    rows = list(csv.reader(io.StringIO(to_csv([t]))))
    columns = [r[2] for r in rows[1:]]
    assert f"vg_relation macro — {VGR_PAPER}" in columns
    assert "_group" in columns and "macro" in columns

    tex = to_latex([t])
    assert r"vg\_relation macro [1] & vg\_relation micro [2] & \_group \\" in tex
    assert r"[1] VG-Relation: macro over relations" in tex


def test_labelled_aggregates_in_html(labelled_run) -> None:
    sections = runs_overview_sections([labelled_run])
    html = render_html("labels", sections, {})
    p = parse(html)
    (aro,) = (t for t in p.tables if "aro_vg" in t["caption"])
    assert aro["rows"][0][5] == "55.50 [50.5, 60.5]"
    assert f'title="{VGR_PAPER}" scope=col>vg_relation macro [1]</th>' in html
    assert f'<p class="note">[1] {VGR_PAPER}</p>' in html
    assert f'<p class="note">[2] {VGR_MICRO}</p>' in html
    assert "_group</th>" in html and 'title="' not in html.split("_group</th>")[0][-80:]
    captions = [c for s in sections[0].subsections for c, _ in s.figures]
    assert any(f"vg_relation macro: {VGR_PAPER}" in c for c in captions)


UNLABELLED_MD = """### aro_vg: acc

| model | vg_relation | vg_attribution | micro | macro | _group |
|---|---:|---:|---:|---:|---:|
| aro-model | 60.00 | 70.00 | 65.00 | 65.00 | 61.00 |

_tied item-metric comparisons per model (counted as failures): aro-model 3_
"""


def test_unlabelled_tables_are_unchanged() -> None:
    rows = [("vg_relation", 60.0, 2), ("vg_attribution", 70.0, 1), ("_micro", 65.0, 3),
            ("_macro", 65.0, 3), ("_group", 61.0, 0)]  # fmt: skip
    run = _record([_result(s, a, ties=t) for s, a, t in rows])
    tables = build_tables([run])
    assert all(t.column_labels == {} and t.footnoted() == (t.headers, []) for t in tables)
    assert to_markdown(tables) == UNLABELLED_MD
    assert [r[2] for r in csv.reader(io.StringIO(to_csv(tables)))][1:] == [
        "vg_relation", "vg_attribution", "micro", "macro", "_group",
    ]  # fmt: skip


def test_aggregate_labels_join_distinct_labels(labelled_run) -> None:
    other = labelled_run.model_copy(
        update={"results": [_result("_vg_relation_macro", 50.0, label=VGR_PAPER + " v2")]}
    )
    labels = aggregate_labels([labelled_run, labelled_run, other])
    assert labels[("aro_vg", "aro_vg", "_vg_relation_macro")] == f"{VGR_PAPER} / {VGR_PAPER} v2"
    assert ("aro_vg", "aro_vg", "_group") not in labels
    assert aggregate_header("_vg_relation_macro", ["vg_relation", "vg"]) == "vg_relation macro"
    assert aggregate_header("_paper_preset", ["vg_relation"]) == "paper_preset"

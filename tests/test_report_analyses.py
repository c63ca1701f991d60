"""The analysis sections of the HTML report and the `report --html` / `compare` commands, on the
generated `synthetic` benchmark (images included) with deterministic test models and blind
scorers. Every number checked here is recomputed with the analysis functions directly."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

import lexsem
from builders.fakes import BagOfWordsEncoder, TinyDualEncoder
from builders.length_scorers import CharLengthScorer, WordCountScorer
from builders.report_pages import parse
from lexsem.analysis import priors
from lexsem.analysis import run_comparison as compare
from lexsem.cli import app
from lexsem.report.analyses import (
    ReportOptions,
    analysis_sections,
    build_report,
    main_metrics,
    split_runs,
)
from lexsem.results.run import Run

SECTIONS = [
    "Results",
    "Linguistic priors",
    "Lexical and syntactic similarity",
    "Comparing runs",
    "Qualitative cases",
    "Runs",
    "Metadata",
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("analysis-report")
    common = {"n_boot": 100, "cache_dir": base / "cache", "offline": True}
    models = {
        "dual": TinyDualEncoder(),
        "bow": BagOfWordsEncoder(32, "bow32"),
        "charlen": CharLengthScorer(),
        "words": WordCountScorer(),
    }
    for key, model in models.items():
        lexsem.evaluate(model, ["synthetic"], out=base / key, **common)
    return {k: base / k for k in models}


@pytest.fixture(scope="module")
def runs(folders: dict[str, Path]) -> dict[str, Run]:
    return {k: Run.load(p) for k, p in folders.items()}


def _numbered(headings: list[str]) -> list[str]:
    return [re.sub(r"^[\d.]+\s+", "", h) for h in headings]


def test_split_and_main_metrics(runs: dict[str, Run]) -> None:
    models, blind = split_runs(list(runs.values()))
    assert [r.record.model.name for r in blind] == ["charlen", "words"]
    assert sorted(main_metrics(runs["dual"], "synthetic")) == ["itt", "tot"]
    assert main_metrics(runs["bow"], "synthetic") == ["tot"]
    assert main_metrics(runs["charlen"], "synthetic") == []
    assert len(models) == 2


def test_html_report_holds_every_analysis(runs: dict[str, Run]) -> None:
    everything = list(runs.values())
    page = build_report(everything, ReportOptions(n_boot=100))
    doc = parse(page)
    heads = _numbered(doc.headings)
    for title in SECTIONS:
        assert title in heads, (title, heads)
    # every figure is an embedded PNG that decodes
    assert len(doc.imgs) >= 10
    for img in doc.imgs:
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,")
        with Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))) as im:
            im.load()
            assert im.size[0] > 200 and im.size[1] > 150
    captions = [t["caption"] for t in doc.tables]

    # hard-test accuracy and gap: the numbers of priors.linguistic_gap on AVG(charlen, words)
    blind = [runs["charlen"], runs["words"]]
    hard = priors.hard_items(blind, "synthetic")
    (gap_table,) = [t for t in doc.tables if "hard-test accuracy" in t["caption"]]
    assert f"the {len(hard)} of 500 items" in gap_table["caption"]
    rows = {(r[0], r[1]): r for r in gap_table["rows"]}
    assert set(rows) == {("tiny-dual", "TOT"), ("tiny-dual", "ITT"), ("bow32", "TOT")}
    for (model, metric), row in rows.items():
        run = runs["dual"] if model == "tiny-dual" else runs["bow"]
        g = priors.linguistic_gap(run, hard, "synthetic", metric.lower(), n_boot=100)
        assert row[2] == f"{g.overall.accuracy:.2f}"
        assert row[3].startswith(f"{g.hard.accuracy:.2f} [")
        assert row[4].startswith(f"{g.overall.gap:.2f}")
        assert row[5] == str(len(hard))

    # the AVG blind row: the blind decision of the averaged scores
    (blind_table,) = [t for t in doc.tables if "blind text scorers" in t["caption"]]
    avg = priors.blind_scores(blind, "synthetic")
    avg_row = next(r for r in blind_table["rows"] if r[0].startswith("AVG"))
    assert avg_row[4] == f"{100 * avg.hits().hits.mean():.2f}"

    # McNemar between the two models on TOT
    (mc_table,) = [t for t in doc.tables if "McNemar" in t["caption"]]
    mc = compare.mcnemar(runs["dual"], runs["bow"], "synthetic", "tot")
    assert mc_table["rows"] == [
        ["synthetic", "TOT", "tiny-dual", "bow32", "500", f"{mc.accuracy_a:.2f}",
         f"{mc.accuracy_b:.2f}", str(mc.b), str(mc.c), f"{mc.p_value:.3g}"]
    ]  # fmt: skip

    # qualitative cases: ITT vs TOT of the dual encoder, with the captions
    (counts,) = [t for t in doc.tables if "items per case" in t["caption"]]
    assert sum(int(r[1]) for r in counts["rows"]) == 500
    examples = [t for t in doc.tables if "examples" in t["caption"]]
    assert examples and all(len(r) == 7 for t in examples for r in t["rows"])

    # similarity: three caption pairs × three measures
    assert any("lexical similarity per caption pair (500 items)" in c for c in captions)
    assert "Syntactic similarity and SLS need a constituency parser" in page


def test_report_without_blind_runs_or_second_model(runs: dict[str, Run]) -> None:
    secs = analysis_sections([runs["bow"]], ReportOptions(n_boot=0))
    by = {s.title: s for s in secs}
    assert "No blind run given" in by["Linguistic priors"].text
    assert "at least two models" in by["Comparing runs"].text
    assert not by["Comparing runs"].tables
    assert "No benchmark has two comparable metrics" in by["Qualitative cases"].text


def test_report_with_a_parser_adds_syntactic_similarity(
    runs: dict[str, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.analysis import parsers

    class FlatParser:
        """Every word a leaf under one NP: syntactic similarity from the word count alone."""

        name = "flat-test"

        def parse(self, texts: list[str]) -> list[str]:
            return ["(ROOT (NP " + " ".join(f"(NN {w})" for w in t.split()) + "))" for t in texts]

    parsers.register_parser("flat-test", FlatParser, replace=True)
    try:
        secs = analysis_sections([runs["bow"]], ReportOptions(n_boot=0, parser="flat-test"))
    finally:
        parsers.PARSERS.remove("flat-test")  # this test only
    sim = next(s for s in secs if s.title.startswith("Lexical"))
    (sub,) = sim.subsections
    syn = [t for t in sub.tables if "syntactic similarity" in t.title]
    assert syn and {r[1] for r in syn[0].rows} == {"syntactic", "SLS"}
    assert any("SLS" in caption for caption, _ in sub.figures)


def test_cli_report_html_latex_and_compare(
    folders: dict[str, Path], runs: dict[str, Run], tmp_path: Path
) -> None:
    cli = CliRunner()
    html = tmp_path / "report.html"
    args = [str(folders[k]) for k in ("dual", "bow", "charlen", "words")]
    res = cli.invoke(app, ["report", *args, "--format", "latex", "--html", str(html),
                           "--n-boot", "50", "--title", "My <study>"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "\\begin{tabular}" in res.stdout and "\\toprule" in res.stdout
    page = html.read_text(encoding="utf-8")
    doc = parse(page)
    assert doc.headings[0] == "My <study>"
    heads = _numbered(doc.headings)
    assert all(t in heads for t in SECTIONS)

    res = cli.invoke(app, ["compare", str(folders["dual"]), str(folders["bow"])])
    assert res.exit_code == 0, res.output
    a, b = runs["dual"], runs["bow"]
    mc = compare.mcnemar(a, b, "synthetic", "tot")
    assert f"| synthetic | tot | 500 | {mc.accuracy_a:.2f} | {mc.accuracy_b:.2f} | {mc.b} |" in (
        res.stdout
    )
    res = cli.invoke(
        app, ["compare", str(folders["dual"]), str(folders["bow"]), "--metric", "nope"]
    )
    assert res.exit_code == 2 and "no metric 'nope'" in res.output

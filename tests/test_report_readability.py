"""What a reader of the HTML report sees: one label per run everywhere, chance lines on the blind
bars, distinct prior-map ticks and a grey legend that says what the caption says, no literal
backticks, collapsed metadata JSON, "1 model" in the singular, and scatter names in a legend."""

from __future__ import annotations

import itertools
import re
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest

import lexsem
from builders.fakes import BagOfWordsEncoder, OtherDual
from builders.length_scorers import CharLengthScorer
from builders.run_records import record, result
from lexsem.report import plots
from lexsem.report.analyses import ReportOptions, build_report
from lexsem.report.labels import run_labels
from lexsem.results.run import Run
from lexsem.results.schema import RunRecord


class FakeLM(CharLengthScorer):
    """Stands in for an `lm:` run: its fingerprint names the `lm` backend."""

    name = "fake-lm"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "lm", "lower_is_better": True, "score": "mean-nll-tokens-2..n"}


def _rec(
    name: str, run_id: str, key: str, benches: list[str], spec: str | None = None
) -> RunRecord:
    r = record(name, [result(b, "tot", "tot", "s", 50.0) for b in benches])
    r.run_id = run_id
    r.model.fingerprint_key = key
    r.model.spec = spec or f"test:{name}"
    return r


def test_one_model_on_different_benchmarks_keeps_its_plain_name() -> None:
    runs = [_rec("minilm", "aaaaaaaa1", "k1", ["synthetic"]), _rec("minilm", "bbbbbbbb2", "k1",
            ["visla_generic"])]  # fmt: skip
    assert run_labels(runs) == {"aaaaaaaa1": "minilm", "bbbbbbbb2": "minilm"}


def test_two_runs_of_one_model_on_one_benchmark_get_their_run_ids_everywhere() -> None:
    runs = [
        _rec("minilm", "aaaaaaaa1", "k1", ["synthetic"]),
        _rec("minilm", "bbbbbbbb2", "k1", ["synthetic"]),
        _rec("minilm", "cccccccc3", "k1", ["visla_generic"]),
        _rec("clip", "dddddddd4", "k2", ["synthetic"]),
    ]
    assert run_labels(runs) == {
        "aaaaaaaa1": "minilm (aaaaaaaa)",
        "bbbbbbbb2": "minilm (bbbbbbbb)",
        "cccccccc3": "minilm (cccccccc)",  # the same model: the same form in every table
        "dddddddd4": "clip",
    }
    assert run_labels([runs[0], runs[0]]) == {"aaaaaaaa1": "minilm"}  # one run given twice


def test_a_long_local_path_is_shown_by_its_backend_and_last_two_folders() -> None:
    long_a = "clip:/tmp/experiments/2026-05-01/checkpoints/lr1e-6-wd0.1/epoch-10"
    long_b = "clip:/tmp/experiments/2026-05-01/checkpoints/lr1e-6-wd0.1/epoch-20"
    runs = [_rec(long_a, "a1", "k1", ["synthetic"], spec=long_a),
            _rec(long_b, "b2", "k2", ["synthetic"], spec=long_b),
            _rec("mine", "c3", "k3", ["synthetic"], spec=long_a + "x")]  # fmt: skip
    assert run_labels(runs) == {
        "a1": "clip:…/lr1e-6-wd0.1/epoch-10",
        "b2": "clip:…/lr1e-6-wd0.1/epoch-20",
        "c3": "mine",  # a --name is shown as given
    }
    # two paths that end alike are shown whole; short specs, hub ids and URLs as they are
    alike = [_rec(long_a, "a1", "k1", ["synthetic"], spec=long_a),
             _rec("clip:/other/place/x/lr1e-6-wd0.1/epoch-10", "b2", "k2", ["synthetic"],
                  spec="clip:/other/place/x/lr1e-6-wd0.1/epoch-10")]  # fmt: skip
    assert set(run_labels(alike).values()) == {long_a, "clip:/other/place/x/lr1e-6-wd0.1/epoch-10"}
    for spec in ("clip:/m/a", "openclip:hf-hub:laion/CLIP-ViT-H-14-laion2B-s32B-b79K",
                 "openai:gpt-4o?base_url=http://localhost:8000/v1/a/b/c/d"):  # fmt: skip
        assert run_labels([_rec(spec, "a1", "k1", ["synthetic"], spec=spec)]) == {"a1": spec}


def test_two_models_of_one_name_are_told_apart_by_spec_or_fingerprint() -> None:
    by_spec = [
        _rec("clip", "a1", "k1", ["synthetic"], spec="clip:/m/a"),
        _rec("clip", "b2", "k2", ["synthetic"], spec="clip:/m/b"),
    ]
    assert run_labels(by_spec) == {"a1": "clip [clip:/m/a]", "b2": "clip [clip:/m/b]"}
    same_spec = [
        _rec("clip", "a1", "1234567890", ["synthetic"], spec="clip"),
        _rec("clip", "b2", "abcdefghij", ["synthetic"], spec="clip"),
    ]
    assert run_labels(same_spec) == {"a1": "clip [12345678]", "b2": "clip [abcdefgh]"}


class _Page(HTMLParser):
    """The page's visible text outside `<code>`, `<pre>` and `<summary>`, the texts of `<pre>`
    blocks and whether each sits in a `<details>`, and the first cell of every table row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.pre_in_details: list[bool] = []
        self.first_cells: list[str] = []
        self._row_cells = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"img", "meta", "wbr", "br"}:
            return
        if tag == "pre":
            self.pre_in_details.append("details" in self.stack)
        if tag == "tr":
            self._row_cells = 0
        if tag in {"td", "th"}:
            self._row_cells += 1
            if self._row_cells == 1 and "tbody" in self.stack:
                self._cell = []
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in {"td", "th"} and self._cell is not None:
            self.first_cells.append("".join(self._cell))
            self._cell = None
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if not {"code", "pre", "style", "title"} & set(self.stack):
            self.text.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two runs of one model on `synthetic` (seeds 0 and 1), another model, and a blind scorer,
    with every figure the report draws kept as its matplotlib figure."""
    base = tmp_path_factory.mktemp("readable")
    common = {"n_boot": 0, "cache_dir": base / "cache", "offline": True}
    jobs = [
        ("bow0", BagOfWordsEncoder(32, "bow"), {"seed": 0}),
        ("bow1", BagOfWordsEncoder(32, "bow"), {"seed": 1}),
        ("dual", OtherDual(), {}),
        ("lm", FakeLM(), {}),
    ]
    for key, model, kw in jobs:
        lexsem.evaluate(model, ["synthetic"], out=base / key, **common, **kw)
    runs = [Run.load(base / k) for k, _, _ in jobs]
    figures: list[Any] = []
    png = plots._png
    chances: list[tuple[str, float | None]] = []
    bars = plots.accuracy_bars

    def keep(fig: Any) -> bytes:
        figures.append(
            {
                "ticks": [
                    ([t.get_text() for t in ax.get_xticklabels()],
                     [t.get_text() for t in ax.get_yticklabels()])
                    for ax in fig.axes
                ],
                "ylabels": [ax.get_ylabel() for ax in fig.axes],
                "titles": [ax.get_title() for ax in fig.axes],
            }
        )  # fmt: skip
        return png(fig)

    def spy_bars(*args: Any, **kw: Any) -> bytes:
        chances.append((args[4], kw.get("chance")))
        return bars(*args, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(plots, "_png", keep)
    mp.setattr(plots, "accuracy_bars", spy_bars)
    try:
        page = build_report(runs, ReportOptions(n_boot=0))
    finally:
        mp.undo()
    parsed = _Page()
    parsed.feed(page)
    ids = {k: r.record.run_id[:8] for k, r in zip(("bow0", "bow1"), runs, strict=False)}
    return {"page": page, "parsed": parsed, "figures": figures, "chances": chances, "ids": ids}


def test_the_blind_bars_have_their_chance_line(report: dict[str, Any]) -> None:
    blind = [c for title, c in report["chances"] if title.endswith("blind")]
    assert blind and blind[0] == pytest.approx(100.0 / 3.0)  # a triplet: N worst of three


def test_every_run_has_one_label_in_every_table(report: dict[str, Any]) -> None:
    a, b = "bow seed=0", "bow seed=1"  # the setting that differs between them
    cells = report["parsed"].first_cells
    assert a in cells and b in cells
    assert "bow" not in cells  # never the bare name for a model with two runs side by side
    text = " ".join(report["parsed"].text)
    assert f"{a} (TOT)" in text and f"{b} (TOT)" in text  # the prior-map captions
    assert "told apart by the settings that differ between them" in text  # the rule, said once


def test_prior_map_ticks_are_distinct_and_grey_is_what_the_caption_says(
    report: dict[str, Any],
) -> None:
    maps = [f for f in report["figures"] if any("prior map" in t for t in f["titles"])]
    assert maps
    for f in maps:
        xt, yt = f["ticks"][0]
        for ticks in (xt, yt):
            assert len(ticks) > 2 and all(p != q for p, q in itertools.pairwise(ticks))
        colour_bar = f["ylabels"][1]
        if "grey" in colour_bar:
            assert "grey: fewer than 10 items" in colour_bar
    assert "blocks with fewer than 10 items are grey" in report["page"]


def test_edge_labels_of_a_narrow_range_are_distinct() -> None:
    labels = plots.edge_labels(np.linspace(10.15, 10.25, 11))
    assert len(set(labels)) == 11 and labels[0] == "10.15"
    assert plots.edge_labels(np.linspace(0, 100, 11))[:3] == ["0", "10", "20"]


def test_no_literal_backticks_and_json_collapsed(report: dict[str, Any]) -> None:
    p: _Page = report["parsed"]
    text = "".join(p.text)
    assert "`" not in text
    assert p.pre_in_details and all(p.pre_in_details)  # every JSON block folds away
    assert "<details><summary>" in report["page"]


def test_backticked_text_is_inline_code() -> None:
    from lexsem.report.html import _inline

    assert _inline("see `a<b`") == "see <code>a&lt;b</code>"
    assert _inline("a lone ` tick") == "a lone ` tick"


def test_one_model_is_not_models(report: dict[str, Any]) -> None:
    text = " ".join(report["parsed"].text)
    assert not re.search(r"\b1 models\b", text)
    assert re.search(r"\b2 models\b", text)  # bow (one of its runs) and the dual encoder


def test_qualitative_columns_say_what_they_count(report: dict[str, Any]) -> None:
    text = " ".join(report["parsed"].text)
    assert "models passing ITT" in text and "the share of the models that get the item" in text
    assert not re.search(r"(?<!models )pass TOT", text)


def test_scatter_names_are_in_a_legend_not_on_the_points(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["a model", "another model", "a third"]
    seen: list[tuple[list[str], list[str]]] = []
    png = plots._png

    def keep(fig: Any) -> bytes:
        ax = fig.axes[0]
        seen.append(([t.get_text() for t in ax.get_legend().get_texts()],
                     [t.get_text() for t in ax.texts]))  # fmt: skip
        return png(fig)

    monkeypatch.setattr(plots, "_png", keep)
    plots.rank_scatter([30, 30.2, 31], [40, 40.1, 40.3], names, "t", "x", "y")
    (legend, texts), *_ = seen
    assert legend == names  # close points: their names apart, in the legend
    assert not set(texts) & set(names)


def test_the_report_labels_the_same_run_the_same_in_tables_and_figures(
    report: dict[str, Any],
) -> None:
    a = "bow seed=0"
    titles = [t for f in report["figures"] for t in f["titles"]]
    assert any(t.startswith(a) for t in titles)  # the prior map's title

"""Every text of every figure lies inside its figure, long model names included.

Each figure the HTML report makes (and each plot function under stress: many series, names of
150 characters, paths without spaces) is drawn; every `Text` artist that was actually drawn
(titles, axis labels, tick labels, legend entries, annotations, colour-bar labels) must have
its window extent inside the figure's bounding box.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

import lexsem
from builders.fakes import BagOfWordsEncoder, OtherDual, TinyDualEncoder
from builders.figures import texts_outside
from builders.length_scorers import CharLengthScorer, WordCountScorer
from lexsem.report import plots
from lexsem.report.analyses import ReportOptions, build_report
from lexsem.results.run import Run

PATH_NAME = (
    "clip:/home/researcher/experiments/2026-05-01/checkpoints/"
    "clip-vit-b32-negclip-finetuned-on-coco-hard-negatives-lr1e-6-wd0.1/epoch-10/final"
)
NO_BREAKS = "x" * 150  # a name without a single place to break a line
SPACED = "a sentence embedder with a very long descriptive name given on the command line"


@pytest.fixture(scope="module")
def long_named_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Run]:
    base = tmp_path_factory.mktemp("long-names")
    common = {"n_boot": 0, "cache_dir": base / "cache", "offline": True}
    jobs = [
        (TinyDualEncoder(), ["synthetic", "synthetic_bi"], PATH_NAME),
        (OtherDual(), ["synthetic", "synthetic_bi"], NO_BREAKS),
        (BagOfWordsEncoder(32, "bow"), ["synthetic"], SPACED),
        (CharLengthScorer(), ["synthetic"], "lm:" + PATH_NAME.split(":", 1)[1]),
        (WordCountScorer(), ["synthetic"], "word count " + NO_BREAKS[:60]),
    ]
    for k, (model, benches, name) in enumerate(jobs):
        lexsem.evaluate(model, benches, out=base / str(k), name=name, **common)
    return [Run.load(base / str(k)) for k in range(len(jobs))]


def test_report_figures_keep_every_text_inside(
    long_named_runs: list[Run], checked_figures: dict[str, list[str]]
) -> None:
    assert long_named_runs[0].record.model.name == PATH_NAME  # --name / name= is recorded
    build_report(long_named_runs, ReportOptions(n_boot=0))
    kinds = {name.split(": ", 1)[1].split(" ")[0] for name in checked_figures}
    assert len(checked_figures) >= 12, list(checked_figures)  # bars, maps, gaps, similarity, ranks
    assert {"synthetic", "synthetic_bi"} <= kinds
    bad = {name: out for name, out in checked_figures.items() if out}
    assert not bad, bad


def _many(n: int) -> list[str]:
    return [f"{PATH_NAME}-{k}" if k % 2 else f"{NO_BREAKS}{k}" for k in range(n)]


STRESS = {
    "bars, 10 long-named models": lambda: plots.accuracy_bars(
        ["swap_obj", "swap_att", "replace_obj", "micro"],
        {name: [10.0 + k, 50.0, 90.0, 40.0] for k, name in enumerate(_many(10))},
        None,
        None,
        "synthetic — TOT " + SPACED,
        chance=100 / 3,
    ),
    "bars, long subset names": lambda: plots.accuracy_bars(
        [f"subset_{NO_BREAKS[:40]}_{k}" for k in range(9)], [50.0] * 9, None, None, NO_BREAKS
    ),
    "heat map": lambda: plots.heatmap(
        np.full((10, 10), 50.0),
        np.linspace(0.0, 12.0, 11),
        np.linspace(0.0, 12.0, 11),
        np.full((10, 10), 30),
        title=f"{PATH_NAME} — synthetic TOT: prior map",
        xlabel="true-caption " + SPACED,
        ylabel="false-caption " + SPACED,
    ),
    "histograms, overlaid": lambda: plots.histograms(
        {name: np.arange(20.0) for name in _many(3)}, PATH_NAME, SPACED
    ),
    "histograms, panels": lambda: plots.histograms(
        {name: np.arange(20.0) for name in _many(6)}, PATH_NAME, SPACED, vline=None
    ),
    "box plots": lambda: plots.box_plots(
        {name: np.arange(20.0) for name in _many(5)}, PATH_NAME, SPACED
    ),
    "rank scatter": lambda: plots.rank_scatter(
        [10.0, 90.0, 50.0, 10.0, 90.0],
        [10.0, 90.0, 50.0, 90.0, 10.0],
        _many(5),
        PATH_NAME,
        SPACED,
        SPACED,
    ),
}


@pytest.mark.parametrize("case", list(STRESS))
def test_plot_functions_keep_long_texts_inside(
    case: str, checked_figures: dict[str, list[str]]
) -> None:
    STRESS[case]()
    ((_, outside),) = checked_figures.items()
    assert not outside, (case, outside)


def test_the_checker_sees_a_text_outside() -> None:
    fig = Figure(figsize=(3, 2), dpi=100)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.text(0.9, 0.5, "a label running off the right edge")
    fig.text(0.1, 0.5, "inside")
    (outside,) = texts_outside(fig)
    assert outside.startswith("'a label running off")


def test_wrap_breaks_paths_and_long_runs() -> None:
    assert plots.wrap("short", 10) == "short"
    assert plots.wrap("clip:/a/b/c", 6) == "clip:/\na/b/c"
    assert all(len(line) <= 20 for line in plots.wrap(PATH_NAME, 20).split("\n"))
    assert plots.wrap(NO_BREAKS, 40).split("\n") == ["x" * 40] * 3 + ["x" * 30]
    assert plots.wrap(PATH_NAME, 20).replace("\n", "") == PATH_NAME  # nothing lost
    assert plots.wrap("a\nb", 10) == "a\nb"
    # never inside a number (a legend's "mean -3.76e-05" was cut after "-3.")
    assert plots.wrap("tiny GPT-2 (n=500, mean -3.76e-05)", 28) == (
        "tiny GPT-2 (n=500, mean\n-3.76e-05)"
    )
    assert plots.wrap("lr1e-6-wd0.1/epoch-10", 8) == "lr1e-6-\nwd0.1/\nepoch-10"


def test_names_are_recorded_and_used_in_tables(long_named_runs: list[Run], tmp_path: Path) -> None:
    from lexsem.report.all_tables import build_tables

    names = {r.record.model.name for r in long_named_runs}
    assert PATH_NAME in names and NO_BREAKS in names
    assert long_named_runs[0].record.config.evaluation["name"] == PATH_NAME
    rows = {row[0] for t in build_tables([r.record for r in long_named_runs]) for row in t.rows}
    assert PATH_NAME in rows and SPACED in rows


class FakeLM(CharLengthScorer):
    """Stands in for an `lm:` run: its fingerprint names the `lm` backend."""

    name = "fake-lm"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "lm", "lower_is_better": True, "score": "mean-nll-tokens-2..n"}


def test_prior_map_axes_say_mean_token_nll(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    common = {"n_boot": 0, "cache_dir": tmp_path / "cache", "offline": True}
    for key, model in (("bow", BagOfWordsEncoder(32, "bow")), ("lm", FakeLM())):
        lexsem.evaluate(model, ["synthetic"], out=tmp_path / key, **common)
    runs = [Run.load(tmp_path / k) for k in ("bow", "lm")]
    axes: list[tuple[str, str]] = []
    heatmap = plots.heatmap

    def spy(*args: Any, **kw: Any) -> bytes:
        axes.append((kw["xlabel"], kw["ylabel"]))
        return heatmap(*args, **kw)

    monkeypatch.setattr(plots, "heatmap", spy)
    page = build_report(runs, ReportOptions(n_boot=0))
    axis = "mean token NLL in nats (lower = more plausible)"
    assert axes == [(f"true-caption {axis}", f"false-caption {axis}")]
    assert f"true- and false-caption {axis}" in page  # the caption says the same
    assert "calls this mean negative log-likelihood per token its perplexity" in page

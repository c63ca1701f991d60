"""Report test fixtures: recorded run results, a second dual encoder, checked figures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from builders.fakes import TinyDualEncoder
from lexsem.report import plots
from lexsem.results.schema import (
    BenchmarkInfo,
    Config,
    FileInfo,
    MetricResult,
    ModelInfo,
    RunRecord,
    Timings,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

TOLERANCE_PX = 0.5


class OtherDual(TinyDualEncoder):
    """A second dual encoder (another projection), so that two models share two metrics."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = np.random.default_rng(1).standard_normal((48, 64)).astype(np.float32)

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-dual-2", "dim": 64}


@contextmanager
def drawn_texts() -> Iterator[list[Text]]:
    """The visible, non-empty `Text` artists drawn inside the block."""
    from matplotlib.text import Text

    drawn: list[Text] = []
    original = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    Text.draw = draw  # type: ignore[method-assign]
    try:
        yield drawn
    finally:
        Text.draw = original  # type: ignore[method-assign]


def texts_outside(fig: Figure) -> list[str]:
    """Each drawn text whose extent leaves the figure, with where it goes."""
    with drawn_texts() as drawn:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width, height = fig.bbox.width, fig.bbox.height
    out = []
    for t in drawn:
        bb = t.get_window_extent(renderer)
        if (
            bb.x0 < -TOLERANCE_PX
            or bb.y0 < -TOLERANCE_PX
            or bb.x1 > width + TOLERANCE_PX
            or bb.y1 > height + TOLERANCE_PX
        ):
            out.append(
                f"{t.get_text()[:50]!r} at x {bb.x0:.0f}..{bb.x1:.0f}, y {bb.y0:.0f}..{bb.y1:.0f} "
                f"in a {width:.0f} x {height:.0f} figure"
            )
    return out


@pytest.fixture
def checked_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every figure made through `plots._png` while the test runs: its title -> texts outside."""
    found: dict[str, list[str]] = {}
    original = plots._png

    def check(fig: Figure) -> bytes:
        sup = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
        name = next((t for t in [*(ax.get_title() for ax in fig.axes), sup] if t), "?")
        found[f"{len(found)}: {name[:60]}"] = texts_outside(fig)
        return original(fig)

    monkeypatch.setattr(plots, "_png", check)
    return found


BIVLC_METRICS = ["i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"]


def result(
    bench: str, task: str, metric: str, subset: str, acc: float, ties: int = 0
) -> MetricResult:
    return MetricResult(
        benchmark=bench, task=task, metric=metric, subset=subset, n=100, hits=int(acc),
        ties=ties, accuracy=acc, ci_low=acc - 5, ci_high=acc + 5,
    )  # fmt: skip


def record(name: str, results: list[MetricResult], tie_policy: str = "strict") -> RunRecord:
    benches = list(dict.fromkeys(r.benchmark for r in results))
    subsets = {b: sorted({r.subset for r in results if r.benchmark == b and r.subset[0] != "_"})
               for b in benches}  # fmt: skip
    return RunRecord(
        lexsem_version="0.0.test", run_id=f"{name}-0123456789", created_at="2026-01-01T00:00:00",
        model=ModelInfo(spec=f"test:{name}", name=name, fingerprint={"backend": "test"},
                        fingerprint_key="f" * 64, batch_size=8),
        benchmarks=[BenchmarkInfo(name=b, subsets=subsets[b], items={s: 100 for s in subsets[b]},
                                  files=[FileInfo(subset=s, file=None, sha256="0" * 64)
                                         for s in subsets[b]])
                    for b in benches],
        config=Config(tasks=sorted({r.task for r in results}), tie_policy=tie_policy, seed=0,
                      n_boot=100, confidence=0.95),
        results=results,
        timings=Timings(total_s=1.0, load_data_s=0.1, encode_s=0.5, cache_s=0.0, metrics_s=0.1,
                        n_texts_unique=0, n_texts_cached=0, n_texts_encoded=0),
    )  # fmt: skip


def bivlc_results(base: float) -> list[MetricResult]:
    out = []
    for k, m in enumerate(BIVLC_METRICS):
        subsets = ["replace_obj", "swap_att", "_replace", "_swap", "_micro", "_macro"]
        out += [result("bivlc", "bivlc", m, s, base + k + j / 10) for j, s in enumerate(subsets)]
    return out


def winoground_results(base: float) -> list[MetricResult]:
    return [
        result("winoground", "winoground", m, "all", base + k)
        for k, m in enumerate(("group", "text", "image"))
    ]

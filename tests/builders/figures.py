"""Checking report figures: the texts matplotlib draws, and those that fall outside the figure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text


TOLERANCE_PX = 0.5


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


def watch_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every figure made through `plots._png` while the test runs: its title -> texts outside
    (the fixture `checked_figures` in tests/conftest.py)."""
    from lexsem.report import plots

    found: dict[str, list[str]] = {}
    original = plots._png

    def check(fig: Figure) -> bytes:
        sup = fig.get_suptitle() if hasattr(fig, "get_suptitle") else ""
        name = next((t for t in [*(ax.get_title() for ax in fig.axes), sup] if t), "?")
        found[f"{len(found)}: {name[:60]}"] = texts_outside(fig)
        return original(fig)

    monkeypatch.setattr(plots, "_png", check)
    return found

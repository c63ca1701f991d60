"""A figure for a paper: a grid of items, each with its image(s), its captions with the
words that differ in bold, and each run's verdict; PNG, or PDF with its fonts embedded as
TrueType (`pdf.fonttype` 42), one column (3.5 in) or two columns (7.16 in) wide."""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.backends.backend_pdf import FigureCanvasPdf
from matplotlib.cbook import is_math_text
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties

from lexsem.errors import LexsemError

__all__ = ["MAX_FIGURE_ITEMS", "WIDTHS", "FigureItem", "grid_figure", "item_grid"]

WIDTHS = {1: 3.5, 2: 7.16}  # inches: one and two columns of a two-column paper
MAX_FIGURE_ITEMS = 24
_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "font.family": "DejaVu Sans", "font.size": 7,
       "text.usetex": False}  # fmt: skip
_LINE = 0.115  # inches per line of 6.5 pt text at 1.25 line spacing
_TEXT_PT = 6.5  # the captions' size
_INDENT = "      "  # a caption's next lines, under its first word
_SPECIAL = str.maketrans({c: f"\\{c}" for c in "$_^{}%&#~\\"})
_SIDE, _GAP, _MARGIN = 0.62, 0.04, 0.04  # inches: an image's side, between images, the edges


@dataclass(frozen=True)
class FigureItem:
    """One cell: a title, captions as (role, [(word, differs)]), verdicts (run, text),
    images as RGB arrays."""

    title: str
    captions: Sequence[tuple[str, Sequence[tuple[str, bool]]]]
    verdicts: Sequence[tuple[str, str]]
    images: Sequence[object]


@functools.cache
def _width_pt(text: str) -> float:
    """The width of one line of caption text as drawn (mathtext where a word is bold), in
    points: the font's own metrics (Agg's, at 72 dpi a pixel is a point)."""
    with matplotlib.rc_context(_RC):
        prop = FontProperties(size=_TEXT_PT)
        measure = RendererAgg(1, 1, 72)
        width, _, _ = measure.get_text_width_height_descent(text, prop, is_math_text(text))
    return float(width)


def _caption_text(role: str, words: Sequence[tuple[str, bool]], width_in: float) -> str:
    """`role: caption`, its words wrapped to lines of at most `width_in` inches as drawn (a word
    longer than that alone on its line), the differing ones in bold (mathtext)."""
    shown = [f"$\\mathbf{{{w.translate(_SPECIAL)}}}$" if d else w.replace("$", r"\$")
             for w, d in words]  # fmt: skip
    head = f"{role}: "
    lines: list[str] = []
    line = ""
    for word in shown:
        trial = f"{line} {word}" if line else word
        if line and _width_pt((_INDENT if lines else head) + trial) > width_in * 72:
            lines.append(line)
            line = word
        else:
            line = trial
    return head + f"\n{_INDENT}".join([*lines, line])


def _images_width(n: int) -> float:
    """Inches the first `n` images (at most 2) of a cell take, gaps included."""
    return min(n, 2) * (_SIDE + _GAP)


def text_width(columns: Literal[1, 2], n_images: int) -> float:
    """Inches a cell's captions may take: its column's width (the figure's width over its
    items per row) less its images and margins."""
    cell = WIDTHS[columns] / (1 if columns == 1 else 2)
    return cell - _images_width(n_images) - (_MARGIN + 0.02) - _MARGIN


def grid_figure(items: Sequence[FigureItem], *, columns: Literal[1, 2] = 2,
                fmt: Literal["png", "pdf"] = "png") -> Figure:  # fmt: skip
    """The figure of `items` on a canvas of `fmt` (Agg for PNG), each item's captions wrapped
    to its column's width (`text_width`); drawn with the figure's settings (`item_grid`)."""
    if not items:
        raise LexsemError("no items to draw")
    if len(items) > MAX_FIGURE_ITEMS:
        raise LexsemError(f"{len(items)} items: a figure shows at most {MAX_FIGURE_ITEMS}")
    width = WIDTHS[columns]
    per_row = 1 if columns == 1 else 2
    cell_w = width / per_row
    texts = [
        "\n".join([it.title, *(_caption_text(r, w, text_width(columns, len(it.images)))
                              for r, w in it.captions)])
        for it in items
    ]  # fmt: skip
    rows = [list(range(k, min(k + per_row, len(items)))) for k in range(0, len(items), per_row)]
    heights = [  # inches: the text's lines (or the images, where a cell has any), then the
        # verdicts' line right below
        max(0.7 if any(items[k].images for k in row) else 0.0,
            max(texts[k].count("\n") + 1 for k in row) * _LINE) + 0.22
        for row in rows
    ]  # fmt: skip
    total = sum(heights) + 0.05
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, total))
        (FigureCanvasPdf if fmt == "pdf" else FigureCanvasAgg)(fig)
        top = total - 0.05
        for row, h in zip(rows, heights, strict=True):
            for c, k in enumerate(row):
                it = items[k]
                x0 = c * cell_w
                for j, image in enumerate(it.images[:2]):
                    fig.add_axes((
                        (x0 + _MARGIN + j * (_SIDE + _GAP)) / width,
                        (top - 0.04 - _SIDE) / total, _SIDE / width, _SIDE / total,
                    )).imshow(image)  # fmt: skip
                    fig.axes[-1].set_axis_off()
                left = x0 + _images_width(len(it.images)) + _MARGIN + 0.02
                fig.text(left / width, (top - 0.03) / total, texts[k], va="top", ha="left",
                         fontsize=_TEXT_PT, linespacing=1.25)  # fmt: skip
                verdicts = "   ".join(f"{run}: {v}" for run, v in it.verdicts)
                fig.text((x0 + _MARGIN) / width, (top - h + 0.05) / total, verdicts,
                         va="bottom", ha="left", fontsize=6, color="#333333")  # fmt: skip
            top -= h
    return fig


def item_grid(items: Sequence[FigureItem], *, columns: Literal[1, 2] = 2,
              fmt: Literal["png", "pdf"] = "png") -> bytes:  # fmt: skip
    """The figure's bytes (PNG at 200 dpi, or PDF)."""
    fig = grid_figure(items, columns=columns, fmt=fmt)
    with matplotlib.rc_context(_RC):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=200, metadata={"Creator": "lexsem explore"})
    return buf.getvalue()

"""A figure for a paper: a grid of items, each with its image(s), its captions with the
words that differ in bold, and each run's verdict; PNG, or PDF with its fonts embedded as
TrueType (`pdf.fonttype` 42), one column (3.5 in) or two columns (7.16 in) wide."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_pdf import FigureCanvasPdf
from matplotlib.figure import Figure

from lexsem.errors import LexsemError

__all__ = ["MAX_FIGURE_ITEMS", "WIDTHS", "FigureItem", "item_grid"]

WIDTHS = {1: 3.5, 2: 7.16}  # inches: one and two columns of a two-column paper
MAX_FIGURE_ITEMS = 24
_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "font.family": "DejaVu Sans", "font.size": 7,
       "text.usetex": False}  # fmt: skip
_LINE = 0.115  # inches per line of 6.5 pt text at 1.25 line spacing
_SPECIAL = str.maketrans({c: f"\\{c}" for c in "$_^{}%&#~\\"})


@dataclass(frozen=True)
class FigureItem:
    """One cell: a title, captions as (role, [(word, differs)]), verdicts (run, text),
    images as RGB arrays."""

    title: str
    captions: Sequence[tuple[str, Sequence[tuple[str, bool]]]]
    verdicts: Sequence[tuple[str, str]]
    images: Sequence[object]


def _caption_text(role: str, words: Sequence[tuple[str, bool]], width: int) -> str:
    plain = " ".join(w for w, _ in words)
    lines = textwrap.wrap(plain, width) or [""]
    out, k = [], 0
    for line in lines:  # the same words, the differing ones in bold (mathtext)
        n = len(line.split())
        parts = [
            f"$\\mathbf{{{w.translate(_SPECIAL)}}}$" if d else w.replace("$", r"\$")
            for w, d in words[k : k + n]
        ]
        out.append(" ".join(parts))
        k += n
    return f"{role}: " + "\n      ".join(out)


def item_grid(items: Sequence[FigureItem], *, columns: Literal[1, 2] = 2,
              fmt: Literal["png", "pdf"] = "png") -> bytes:  # fmt: skip
    """The figure's bytes (PNG at 200 dpi, or PDF)."""
    if not items:
        raise LexsemError("no items to draw")
    if len(items) > MAX_FIGURE_ITEMS:
        raise LexsemError(f"{len(items)} items: a figure shows at most {MAX_FIGURE_ITEMS}")
    width = WIDTHS[columns]
    per_row = 1 if columns == 1 else 2
    cell_w = width / per_row
    wrap = max(20, int(cell_w * 12) - 14)
    texts = [
        "\n".join([it.title, *(_caption_text(r, w, wrap) for r, w in it.captions)]) for it in items
    ]
    rows = [list(range(k, min(k + per_row, len(items)))) for k in range(0, len(items), per_row)]
    heights = [  # inches: the text's lines (or the image), then the verdicts' line
        max(0.7, max(texts[k].count("\n") + 1 for k in row) * _LINE) + 0.22 for row in rows
    ]
    total = sum(heights) + 0.05
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, total))
        (FigureCanvasPdf if fmt == "pdf" else FigureCanvasAgg)(fig)
        top = total - 0.05
        for row, h in zip(rows, heights, strict=True):
            for c, k in enumerate(row):
                it = items[k]
                x0 = c * cell_w
                img_w = 0.0
                for j, image in enumerate(it.images[:2]):
                    side = 0.62
                    fig.add_axes((
                        (x0 + 0.04 + j * (side + 0.04)) / width, (top - 0.04 - side) / total,
                        side / width, side / total,
                    )).imshow(image)  # fmt: skip
                    fig.axes[-1].set_axis_off()
                    img_w = (j + 1) * (side + 0.04)
                fig.text((x0 + img_w + 0.06) / width, (top - 0.03) / total, texts[k],
                         va="top", ha="left", fontsize=6.5, linespacing=1.25)  # fmt: skip
                verdicts = "   ".join(f"{run}: {v}" for run, v in it.verdicts)
                fig.text((x0 + 0.04) / width, (top - h + 0.05) / total, verdicts, va="bottom",
                         ha="left", fontsize=6, color="#333333")  # fmt: skip
            top -= h
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=200, metadata={"Creator": "lexsem explore"})
    return buf.getvalue()

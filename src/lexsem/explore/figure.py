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
    rows = -(-len(items) // per_row)
    cell_h = 1.45
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, rows * cell_h))
        (FigureCanvasPdf if fmt == "pdf" else FigureCanvasAgg)(fig)
        cell_w = 1.0 / per_row
        wrap = int(width / per_row * 11)
        for k, it in enumerate(items):
            r, c = divmod(k, per_row)
            x0, y0 = c * cell_w, 1.0 - (r + 1) / rows
            h = 1.0 / rows
            img_w = 0.0
            for j, image in enumerate(it.images[:2]):
                ax = fig.add_axes((x0 + 0.005 + j * 0.16 * cell_w, y0 + h * 0.3,
                                   0.15 * cell_w, h * 0.62))  # fmt: skip
                ax.imshow(image)
                ax.set_axis_off()
                img_w = (j + 1) * 0.16 * cell_w
            text = [f"{it.title}"]
            text += [_caption_text(role, words, wrap - 8) for role, words in it.captions]
            fig.text(x0 + img_w + 0.01, y0 + h * 0.95, "\n".join(text), va="top", ha="left",
                     fontsize=6.5, linespacing=1.25)  # fmt: skip
            verdicts = "   ".join(f"{run}: {v}" for run, v in it.verdicts)
            fig.text(x0 + 0.01, y0 + h * 0.06, verdicts, va="bottom", ha="left", fontsize=6,
                     color="#333333", wrap=True)  # fmt: skip
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=200, metadata={"Creator": "lexsem explore"})
    return buf.getvalue()

"""A critical-difference-style figure of one board table (SVG): the models on an accuracy axis,
best on the right, and under them one bar per rank group joining the models that are not
significantly different (Demšar 2006 draws mean ranks; the board draws accuracies, the groups
being those of `lexsem.stats.rank_groups`). Text is drawn as paths (no font, no markup from
a model's name reaches the SVG as text), and the file carries no date: the same table gives
the same bytes."""

from __future__ import annotations

import io

from lexsem.publish.board import BoardTable

__all__ = ["MAX_PLOTTED", "cd_svg"]

MAX_PLOTTED = 40  # models drawn (the best); a longer table is cut, and its caption says so


def cd_svg(table: BoardTable) -> bytes | None:
    """The figure of `table` (SVG bytes), or None when it has no rank groups."""
    groups = table.groups
    if groups is None or len(groups.order) < 2:
        return None
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    k = min(len(groups.order), MAX_PLOTTED)
    names, acc = groups.order[:k], groups.accuracy[:k]
    bars = [[i for i in g if i < k] for g in groups.groups]
    bars = [g for g in bars if len(g) > 1]
    height = 1.6 + 0.22 * k + 0.18 * len(bars)
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "lexsem"}):
        fig = Figure(figsize=(8.0, height), layout="constrained")
        FigureCanvasSVG(fig)
        ax = fig.subplots()
        lo, hi = min(acc), max(acc)
        pad = max(1.0, (hi - lo) * 0.08)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(-len(bars) - 1, k + 0.5)
        for i, (name, a) in enumerate(zip(names, acc, strict=True)):
            y = k - i
            ax.plot([a], [y], "o", color="C0", markersize=4)
            short = name if len(name) <= 48 else name[:47] + "…"
            ax.annotate(f"{groups.rank[name]}. {short} ({a:.1f})", (a, y), xytext=(6, 0),
                        textcoords="offset points", va="center", fontsize=7)  # fmt: skip
        for j, g in enumerate(bars):
            xs = [acc[i] for i in g]
            ax.plot([min(xs), max(xs)], [-j - 0.5] * 2, "-", color="k", linewidth=3,
                    solid_capstyle="round")  # fmt: skip
        ax.set_yticks([])
        ax.set_xlabel(f"accuracy (%) on the {groups.n} paired items")
        cut = f" (best {k} of {len(groups.order)})" if k < len(groups.order) else ""
        ax.set_title(
            f"{table.title} — {table.subset_label}{cut}: bars join models not significantly "
            f"different (McNemar, Holm, α={groups.alpha})",
            fontsize=8,
        )
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()

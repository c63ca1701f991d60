"""Report figures as PNG bytes: accuracy bars, prior heat maps, histograms, box plots, scatter.

Every function draws on its own `matplotlib.figure.Figure` with the Agg canvas (no pyplot, no
global figure state, no display needed, safe to call from threads), under matplotlib's default
style with fixed sizes and dpi, mathtext off (so `$` or `_` in a model name is drawn as is), and
PNG metadata without the "Software" entry: the same inputs give the same bytes.

Needs matplotlib (the `web` extra: `pip install lexsem[web]`).
"""

from __future__ import annotations

import io
import itertools
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib import colormaps
from matplotlib import style as mpl_style
from matplotlib.backends.backend_agg import FigureCanvasAgg  # the Agg canvas, whatever
from matplotlib.figure import Figure  # backend pyplot may use elsewhere: we never import it
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

DPI = 100
_RC = {
    "text.parse_math": False,
    "text.usetex": False,
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 11,
    "axes.grid": False,
    "savefig.dpi": DPI,
}
_COLORS = list(colormaps["tab10"].colors) + list(colormaps["tab20b"].colors)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*")


def _figure(width: float, height: float, rows: int = 1, cols: int = 1, **kw: Any):
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False, **kw)
    return fig, axes


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    fig.clear()
    return buf.getvalue()


def _floats(values: Any) -> np.ndarray:
    return np.array(
        [np.nan if v is None else float(v) for v in np.ravel(np.asarray(values, dtype=object))],
        dtype=float,
    )


def _floats_or_nan(values: Any, n: int) -> np.ndarray:
    if values is None:
        return np.full(n, np.nan)
    v = _floats(values)
    if len(v) != n:
        raise ValueError(f"{len(v)} CI bounds for {n} labels")
    return v


def _empty(ax: Any, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


# a token, then what it may be broken after: spaces, `/ _ :`, and `- . ,` unless a digit
# follows (never inside a number: `-3.76e-05`, `0.1`, `1,000`)
_BREAK_AFTER = re.compile(r"(?:[^\s/_\-.:,]|[\-.,](?=\d))*(?:(?:\s|[/_:]|[\-.,](?!\d))+|$)")


def wrap(text: Any, width: int) -> str:
    """`text` in lines of at most `width` characters (its own line breaks kept): broken after
    spaces and after `/ _ - . : ,` (paths, hub ids) but never inside a number, and anywhere
    inside a longer run, so that a long model name never runs off a figure."""
    width = max(int(width), 4)
    lines: list[str] = []
    for para in str(text).split("\n"):
        line = ""
        for token in _BREAK_AFTER.findall(para):
            if len(line) + len(token.rstrip()) > width and line:
                lines.append(line.rstrip())
                line = ""
            while len(token.rstrip()) > width:
                lines.append(token[:width])
                token = token[width:]
            line += token
        lines.append(line.rstrip())
    return "\n".join(lines)


def _chars(width_in: float, fontsize: float) -> int:
    """About how many characters of DejaVu Sans at `fontsize` fit in `width_in` inches."""
    return max(8, int(width_in * 72 / (0.62 * fontsize)))


def _lines(labels: Sequence[str]) -> int:
    return sum(s.count("\n") + 1 for s in labels)


def accuracy_bars(
    labels: Sequence[str],
    values: Sequence[float | None] | Mapping[str, Sequence[float | None]],
    ci_low: Sequence[float | None] | Mapping[str, Sequence[float | None]] | None,
    ci_high: Sequence[float | None] | Mapping[str, Sequence[float | None]] | None,
    title: str,
    chance: float | None = None,
    *,
    ylabel: str = "accuracy (%)",
    ylim: tuple[float, float] | None = (0.0, 100.0),
    annotate: bool | None = None,
) -> bytes:
    """Bars per label (x groups, e.g. subsets) with CI error bars and an optional chance line.

    `values` is one sequence (one bar per label) or a mapping series -> sequence (grouped bars,
    e.g. model -> accuracy per subset); `ci_low` / `ci_high` have the same shape (None, or None /
    NaN entries: no error bar). `chance` draws a dashed horizontal line. Values are written above
    the bars when `annotate` is true (default: when there are at most 40 bars).
    """
    with mpl_style.context("default"), matplotlib.rc_context(_RC):
        series = dict(values) if isinstance(values, Mapping) else {"": values}
        lows = ci_low if isinstance(ci_low, Mapping) else {k: ci_low for k in series}
        highs = ci_high if isinstance(ci_high, Mapping) else {k: ci_high for k in series}
        n_groups, n_series = len(labels), len(series)
        width = min(14.0, max(5.0, 1.0 + n_groups * (0.35 + 0.22 * n_series)))
        names = {k: wrap(k, 26) for k in series}
        legend = [*names.values(), *([] if chance is None else ["chance"])]
        height = max(4.2, 1.6 + 0.16 * (_lines(legend) + len(legend)))
        fig, axes = _figure(width + (2.2 if n_series > 1 or chance is not None else 0), height)
        ax = axes[0, 0]
        if not n_groups or not n_series:
            _empty(ax)
        x = np.arange(n_groups, dtype=float)
        bar_w = 0.8 / max(n_series, 1)
        if annotate is None:
            annotate = n_groups * n_series <= 40
        for k, (name, vals) in enumerate(series.items()):
            v = _floats(vals)
            if len(v) != n_groups:
                raise ValueError(f"series {name!r} has {len(v)} values for {n_groups} labels")
            pos = x - 0.4 + bar_w * (k + 0.5)
            color = _COLORS[k % len(_COLORS)]
            ax.bar(pos, np.nan_to_num(v), bar_w * 0.92, label=names[name] or None, color=color)
            lo, hi = (
                _floats_or_nan(lows.get(name), n_groups),
                _floats_or_nan(highs.get(name), n_groups),
            )
            ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(v)
            if ok.any():
                err = np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])[:, ok]
                ax.errorbar(pos[ok], v[ok], yerr=err, fmt="none", ecolor="0.15", capsize=2, lw=0.9)
            if annotate:
                tops = np.where(ok, hi, v)
                for p, val, top in zip(pos, v, tops, strict=True):
                    if np.isfinite(val):
                        ax.annotate(
                            f"{val:.1f}",
                            (p, top),
                            xytext=(0, 2),
                            textcoords="offset points",
                            ha="center",
                            va="bottom",
                            fontsize=7 if n_series > 2 else 8,
                        )
        if chance is not None:
            ax.axhline(chance, color="0.3", ls="--", lw=1.0, label=f"chance ({chance:.1f})")
        ax.set_xticks(
            x,
            [wrap(s, 18) for s in labels],
            rotation=30 if n_groups > 6 else 0,
            ha="right" if n_groups > 6 else "center",
        )
        ax.set_xlim(-0.6, n_groups - 0.4)
        if ylim is not None:
            top = ylim[1] * 1.08 if annotate else ylim[1]
            ax.set_ylim(ylim[0], top)
        ax.set_ylabel(wrap(ylabel, _chars(height - 1.8, 9)))
        ax.set_title(wrap(title, _chars(width - 1.0, 11)))
        ax.yaxis.grid(True, color="0.9")
        ax.set_axisbelow(True)
        if n_series > 1 or chance is not None:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        return _png(fig)


def _luminance(rgba: Sequence[float]) -> float:
    r, g, b = rgba[:3]
    return 0.299 * r + 0.587 * g + 0.114 * b


def edge_labels(edges: Sequence[float]) -> list[str]:
    """Tick labels for bin edges with as few decimals (0-6) as keep every two neighbours
    distinct: `10.15 10.18 10.21`, never `10.2 10.2 10.2` on a narrow range."""
    values = [float(e) for e in edges]
    labels: list[str] = []
    for digits in range(7):
        labels = [f"{e:.{digits}f}".replace("-0.", "0.").lstrip("-") if round(e, digits) == 0
                  else f"{e:.{digits}f}" for e in values]  # fmt: skip
        if all(a != b for a, b in itertools.pairwise(labels)):
            break
    return labels


def heatmap(
    matrix: Any,
    x_edges: Sequence[float],
    y_edges: Sequence[float],
    counts: Any = None,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    *,
    vmin: float = 0.0,
    vmax: float = 100.0,
    cbar_label: str = "accuracy (%)",
    cmap: str = "viridis",
    grey: str = "no items",
) -> bytes:
    """Accuracy per block of a 2-D binning (the prior map of "The Role of Linguistic Priors in
    Measuring Compositional Generalization of Vision-Language Models", §5.1, Fig. 1).

    `matrix[i, j]` is the value of y bin i (row 0 = lowest y, drawn at the bottom) and x bin j;
    NaN blocks are grey and unlabelled, the colour bar saying what they are (`grey`, e.g.
    "fewer than 10 items"). `x_edges` / `y_edges` are the bin edges
    (len = columns + 1 / rows + 1, may be uneven, e.g. quantiles); `counts` (same shape, optional)
    is written under each value as `n=...`. Colour bar from `vmin` to `vmax` (default 0-100).
    """
    m = np.array(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {m.shape}")
    xe, ye = np.asarray(x_edges, dtype=float), np.asarray(y_edges, dtype=float)
    if len(xe) != m.shape[1] + 1 or len(ye) != m.shape[0] + 1:
        raise ValueError(
            f"edges must have {m.shape[1] + 1} (x) and {m.shape[0] + 1} (y) values, "
            f"got {len(xe)} and {len(ye)}"
        )
    c = None if counts is None else np.asarray(counts, dtype=float)
    if c is not None and c.shape != m.shape:
        raise ValueError(f"counts shape {c.shape} != matrix shape {m.shape}")
    with mpl_style.context("default"), matplotlib.rc_context(_RC):
        fig, axes = _figure(7.4, 6.0)
        ax = axes[0, 0]
        cm = colormaps[cmap].with_extremes(bad="0.88")
        mesh = ax.pcolormesh(
            xe,
            ye,
            np.ma.masked_invalid(m),
            cmap=cm,
            vmin=vmin,
            vmax=vmax,
            edgecolors="white",
            linewidth=0.6,
        )
        big = max(m.shape) > 12
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                v = m[i, j]
                if not np.isfinite(v):
                    continue
                rgba = cm(mesh.norm(v))
                color = "black" if _luminance(rgba) > 0.5 else "white"
                text = f"{v:.0f}"
                if c is not None and np.isfinite(c[i, j]) and not big:
                    text += f"\nn={int(c[i, j])}"
                ax.text(
                    (xe[j] + xe[j + 1]) / 2,
                    (ye[i] + ye[i + 1]) / 2,
                    text,
                    ha="center",
                    va="center",
                    color=color,
                    fontsize=6 if big else 7 if c is not None else 8,
                    linespacing=1.0,
                )
        ax.set_xlim(xe[0], xe[-1])
        ax.set_ylim(ye[0], ye[-1])
        if len(xe) <= 21:
            xl = edge_labels(xe)
            long = max(map(len, xl)) > 4
            ax.set_xticks(xe, xl, rotation=45 if long else 0, ha="right" if long else "center")
            ax.tick_params(axis="x", labelsize=7)
        if len(ye) <= 21:
            ax.set_yticks(ye, edge_labels(ye), fontsize=7)
        ax.set_xlabel(wrap(xlabel, 60))
        ax.set_ylabel(wrap(ylabel, 50))
        ax.set_title(wrap(title, 60))
        cb = fig.colorbar(mesh, ax=ax, shrink=0.9)
        cb.set_label(cbar_label + (f"  (grey: {grey})" if np.isnan(m).any() else ""))
        return _png(fig)


def _bin_edges(arrays: list[np.ndarray], bins: int) -> np.ndarray:
    allv = np.concatenate(arrays) if arrays else np.array([])
    if not len(allv):
        return np.linspace(-1.0, 1.0, bins + 1)
    lo, hi = float(allv.min()), float(allv.max())
    if np.all(allv == np.round(allv)) and hi - lo <= 2 * bins:  # integers (edit distances)
        return np.arange(lo - 0.5, hi + 1.5, 1.0)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.histogram_bin_edges(allv, bins=bins, range=(lo, hi))


def histograms(
    series: Mapping[str, Any],
    title: str,
    xlabel: str,
    bins: int = 40,
    vline: float | None = 0.0,
    *,
    overlay: bool | None = None,
    density: bool = False,
) -> bytes:
    """Histograms of several series on shared bins, e.g. score gaps (centred on 0) or edit
    distances (integer data get one bin per integer).

    Overlaid (translucent, with outlines) for up to 3 series, else one small panel per series
    sharing the x axis (`overlay` forces either). `vline` draws a dashed vertical line (None:
    none). Legends give n and the mean; NaN / inf values are dropped.
    """
    clean = {}
    for name, v in series.items():
        a = np.asarray(v, dtype=float).ravel()
        clean[str(name)] = a[np.isfinite(a)]
    edges = _bin_edges([a for a in clean.values() if len(a)], bins)
    if overlay is None:
        overlay = len(clean) <= 3
    with mpl_style.context("default"), matplotlib.rc_context(_RC):
        if overlay or not clean:
            fig, axes = _figure(7.0, 4.0)
            panels = [axes[0, 0]] * max(len(clean), 1)
            cols = 1
        else:
            cols = 2 if len(clean) > 3 else 1
            rows = math.ceil(len(clean) / cols)
            fig, axes = _figure(
                7.0 if cols == 1 else 9.0, 1.0 + 1.7 * rows, rows, cols, sharex=True
            )
            panels = list(axes.ravel())
            for ax in panels[len(clean) :]:
                ax.set_visible(False)
        if not clean:
            _empty(panels[0])
        for k, ((name, a), ax) in enumerate(zip(clean.items(), panels, strict=False)):
            color = _COLORS[k % len(_COLORS)]
            mean = f", mean {a.mean():.3g}" if len(a) else ""
            lab = wrap(f"{name} (n={len(a)}{mean})", 44 if overlay or cols == 1 else 40)
            ax.hist(a, bins=edges, color=color, alpha=0.35 if overlay else 0.7, density=density)
            ax.hist(a, bins=edges, color=color, histtype="step", lw=1.2, density=density, label=lab)
            if vline is not None and (not overlay or k == 0):
                ax.axvline(vline, color="0.2", ls="--", lw=1.0)
            if not overlay:
                ax.set_title(lab, fontsize=9)
            ax.set_ylabel("density" if density else "items")
            ax.yaxis.grid(True, color="0.92")
            ax.set_axisbelow(True)
        if overlay and clean:
            panels[0].legend(fontsize=8, frameon=False)
            panels[0].set_xlabel(wrap(xlabel, 80))
        elif clean:
            for ax in panels[: len(clean)]:
                ax.tick_params(labelbottom=True)
            fig.supxlabel(wrap(xlabel, 80), fontsize=9)
        fig.suptitle(wrap(title, 70), fontsize=11)
        return _png(fig)


def box_plots(
    groups: Mapping[str, Any],
    title: str,
    ylabel: str,
    *,
    hline: float | None = None,
) -> bytes:
    """One box per group (e.g. SLS for P1-P2, P1-N, P2-N): quartiles, 1.5 IQR whiskers,
    outliers, and the mean as a white diamond; tick labels give n. NaN / inf dropped."""
    names = [str(k) for k in groups]
    data = []
    for v in groups.values():
        a = np.asarray(v, dtype=float).ravel()
        data.append(a[np.isfinite(a)])
    with mpl_style.context("default"), matplotlib.rc_context(_RC):
        fig, axes = _figure(max(4.5, 1.2 + 1.1 * len(names)), 4.2)
        ax = axes[0, 0]
        if not names:
            _empty(ax)
        else:
            bp = ax.boxplot(
                [d if len(d) else [np.nan] for d in data],
                patch_artist=True,
                showmeans=True,
                widths=0.55,
                meanprops={
                    "marker": "D",
                    "markerfacecolor": "white",
                    "markeredgecolor": "black",
                    "markersize": 5,
                },
                medianprops={"color": "black"},
                flierprops={"marker": ".", "markersize": 3, "alpha": 0.5},
            )
            for k, patch in enumerate(bp["boxes"]):
                patch.set_facecolor(_COLORS[k % len(_COLORS)])
                patch.set_alpha(0.6)
            ax.set_xticks(
                range(1, len(names) + 1),
                [f"{wrap(n, 16)}\n(n={len(d)})" for n, d in zip(names, data, strict=True)],
            )
        if hline is not None:
            ax.axhline(hline, color="0.3", ls="--", lw=1.0)
        ax.set_ylabel(wrap(ylabel, _chars(4.2 - 1.8, 9)))
        ax.set_title(wrap(title, _chars(max(4.5, 1.2 + 1.1 * len(names)) - 1.0, 11)))
        ax.yaxis.grid(True, color="0.92")
        ax.set_axisbelow(True)
        return _png(fig)


def rank_scatter(
    x: Sequence[float],
    y: Sequence[float],
    labels: Sequence[str],
    title: str,
    xlabel: str,
    ylabel: str,
    *,
    diagonal: bool = True,
    invert: bool = False,
) -> bytes:
    """Scatter of two per-model quantities (ranks or accuracies on two benchmarks), with the
    y = x diagonal and Spearman's rho (n >= 3). Each model is a point of its own colour and
    marker, named in a legend beside the axes (names written next to the points would overlap
    where models score alike). `invert` flips both axes (rank 1 top right)."""
    xv, yv = _floats(x), _floats(y)
    if not (len(xv) == len(yv) == len(labels)):
        raise ValueError(f"x, y and labels differ in length: {len(xv)}, {len(yv)}, {len(labels)}")
    ok = np.isfinite(xv) & np.isfinite(yv)
    with mpl_style.context("default"), matplotlib.rc_context(_RC):
        names = [wrap(s, 28) for s, good in zip(labels, ok, strict=True) if good]
        height = max(5.4, 1.4 + 0.17 * (_lines(names) + len(names)))
        fig, axes = _figure(8.4, height)
        ax = axes[0, 0]
        if not ok.any():
            _empty(ax)
        else:
            xs, ys = xv[ok], yv[ok]
            lo, hi = float(min(xs.min(), ys.min())), float(max(xs.max(), ys.max()))
            pad = 0.06 * (hi - lo) if hi > lo else 1.0
            lo, hi = lo - pad, hi + pad
            if diagonal:
                ax.plot([lo, hi], [lo, hi], color="0.6", ls="--", lw=1.0, zorder=1)
            for k, (px, py, name) in enumerate(zip(xs, ys, names, strict=True)):
                ax.scatter(
                    [px], [py], s=46, color=_COLORS[k % len(_COLORS)],
                    marker=_MARKERS[k % len(_MARKERS)], zorder=3, edgecolors="white", lw=0.5,
                    label=name,
                )  # fmt: skip
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            if invert:
                ax.invert_xaxis()
                ax.invert_yaxis()
            if len(xs) >= 3:
                from scipy.stats import spearmanr

                with warnings.catch_warnings():  # constant input: rho is NaN, shown as n/a
                    warnings.simplefilter("ignore")
                    rho = float(spearmanr(xs, ys)[0])
                rho_s = f"{rho:.2f}" if np.isfinite(rho) else "n/a"
                ax.text(
                    0.02,
                    0.98,
                    f"Spearman ρ = {rho_s} (n={len(xs)})",
                    transform=ax.transAxes,
                    va="top",
                    fontsize=8.5,
                    bbox={"facecolor": "white", "edgecolor": "0.8", "pad": 3},
                )
        ax.set_xlabel(wrap(xlabel, 60))
        ax.set_ylabel(wrap(ylabel, 50))
        ax.set_title(wrap(title, 60))
        ax.grid(True, color="0.92")
        ax.set_axisbelow(True)
        return _png(fig)


_KIND_COLORS = {"none": "0.55", "multiple": "#c44e52", "refusal": "#8172b2", "unparseable": "0.25"}


def position_bias_bars(
    orderings: Sequence[str],
    positions: Sequence[Sequence[float]],
    others: Mapping[str, Sequence[float]],
    title: str,
    *,
    right: Sequence[int | None] | None = None,
) -> bytes:
    """Position bias of a multiple-choice model (SugarCrepe++ App. G.1 asks the same question
    with the options reordered): left, per ordering (x groups), the share (%) of the answers
    naming an option that name each position, one bar per position, the right option's bar
    outlined (`right`: 1-based, None for none) and a dashed line at the share of a model
    without preference; right, per ordering, the share (%) of all answers that name no single
    option, stacked by kind (`others`: kind -> one value per ordering)."""
    n_pos = max((len(p) for p in positions), default=0)
    rows = np.array([list(p) + [np.nan] * (n_pos - len(p)) for p in positions], dtype=float)
    right = list(right) if right is not None else [None] * len(orderings)
    with mpl_style.context("default"), matplotlib.rc_context(_RC):
        width = min(14.0, max(8.0, 4.0 + len(orderings) * (0.5 + 0.3 * n_pos)))
        fig, axes = _figure(width, 4.6, 1, 2, gridspec_kw={"width_ratios": [3, 2]})
        _position_panel(axes[0, 0], orderings, rows, right)
        _other_panel(axes[0, 1], orderings, others)
        fig.suptitle(wrap(title, _chars(width - 0.6, 11)), fontsize=11)
        return _png(fig)


def _position_panel(
    ax: Any, orderings: Sequence[str], rows: np.ndarray, right: Sequence[int | None]
) -> None:
    n_groups, n_pos = rows.shape if rows.size else (len(orderings), 0)
    if not n_groups or not n_pos:
        _empty(ax)
        return
    x = np.arange(n_groups, dtype=float)
    bar_w = 0.8 / n_pos
    for k in range(n_pos):
        pos = x - 0.4 + bar_w * (k + 0.5)
        v = rows[:, k]
        edges = ["black" if r == k + 1 else "none" for r in right]
        ax.bar(pos, np.nan_to_num(v), bar_w * 0.92, color=_COLORS[k % len(_COLORS)],
               edgecolor=edges, linewidth=1.6)  # fmt: skip
        for p, val in zip(pos, v, strict=True):
            if np.isfinite(val):
                ax.annotate(f"{val:.0f}", (p, val), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7)  # fmt: skip
    ax.axhline(100.0 / n_pos, color="0.3", ls="--", lw=1.0)
    ax.set_xticks(x, [wrap(o, 12) for o in orderings])
    ax.set_xlim(-0.6, n_groups - 0.4)
    ax.set_ylim(0.0, 110.0)
    ax.set_ylabel("% of the answers naming an option")
    ax.set_title("position named", fontsize=9)
    ax.yaxis.grid(True, color="0.9")
    ax.set_axisbelow(True)
    handles = [Patch(color=_COLORS[k % len(_COLORS)], label=f"({k + 1})") for k in range(n_pos)]
    handles += [Patch(facecolor="white", edgecolor="black", lw=1.6, label="right option"),
                Line2D([], [], color="0.3", ls="--", lw=1.0, label="no preference")]  # fmt: skip
    ax.legend(handles=handles, fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.1),
              ncols=len(handles), frameon=False)  # fmt: skip


def _other_panel(ax: Any, orderings: Sequence[str], others: Mapping[str, Sequence[float]]) -> None:
    x = np.arange(len(orderings), dtype=float)
    bottom = np.zeros(len(orderings))
    for k, (kind, values) in enumerate(others.items()):
        v = np.nan_to_num(_floats(values))
        color = _KIND_COLORS.get(kind, _COLORS[(k + 4) % len(_COLORS)])
        ax.bar(x, v, 0.6, bottom=bottom, color=color, label=kind)
        bottom = bottom + v
    for p, total in zip(x, bottom, strict=True):
        ax.annotate(f"{total:.1f}", (p, total), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7)  # fmt: skip
    top = float(bottom.max()) if len(bottom) else 0.0
    ax.set_ylim(0.0, max(10.0, top * 1.3))
    ax.set_xticks(x, [wrap(o, 12) for o in orderings])
    ax.set_ylabel("% of all answers")
    ax.set_title("answers naming no single option", fontsize=9)
    ax.yaxis.grid(True, color="0.9")
    ax.set_axisbelow(True)
    if others:
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=2,
                  frameon=False)  # fmt: skip

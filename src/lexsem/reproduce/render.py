"""A table's comparison as Markdown (the terminal shows the same text) and CSV: published vs
lexsem with Δ per cell, a `*` on each Δ whose published number lies outside the run's
confidence interval, and the rows that did not run with what they need. Each row says the
activation its model runs where the model has one to say (open_clip: QuickGELU or GELU, as its
weights were trained; `activation`); a Markdown table has that column when one of its rows
does. A published number that no k/n over the public items gives at the paper's precision
(`lexsem.report.paper.attainability`) is marked `†`, with a legend line naming the n; the CSV
gives each cell's n (`n`, or the subsets' counts of a macro joined by `+`) and `attainable`
(true, false, or empty when not checked). Markdown tables are `lexsem.report.tables.Table`s,
rendered by `to_markdown`."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from functools import cache

from lexsem.outputs import TABLE_MARKS
from lexsem.report.paper.attainability import MARK, PublishedCell, check_table, unattainable
from lexsem.report.paper.facts import PaperTable
from lexsem.report.tables import Table, to_markdown
from lexsem.reproduce.published_vs_measured import Comparison

OUTSIDE = "*"
CSV_FIELDS = (
    "table", "model", "spec", "benchmark", "task", "metric", "subset", "column", "published",
    "lexsem", "delta", "ci_low", "ci_high", "outside_ci", "status", "why", "activation", "n",
    "attainable",
)  # fmt: skip
# the header lines of the comparison CSVs lexsem wrote: now, before `n` and `attainable`, and
# before `activation`
CSV_HEADS = (CSV_FIELDS, CSV_FIELDS[:-2], CSV_FIELDS[:-3])
NO_ACTIVATION = "—"
ACTIVATION_NOTE = (
    "Activation: what the row's open_clip model runs, as its weights were trained (— for "
    "other models)"
)


@cache
def activation(spec: str | None) -> str | None:
    """The activation the model of `spec` runs (`lexsem.models.activation`), or None."""
    from lexsem.models.activation import spec_activation

    return None if spec is None else spec_activation(spec)


def _num(value: float | None, fmt: str = ".2f") -> str:
    return "" if value is None else format(value, fmt)


def delta_text(c: Comparison) -> str:
    """`+0.31`, `-1.20 *` (outside the interval), or `` when nothing was compared."""
    if c.delta is None:
        return ""
    text = f"{round(c.delta, 2) or 0.0:+.2f}"  # never "-0.00"
    return f"{text} {OUTSIDE}" if c.outside else text


def ci_text(c: Comparison) -> str:
    if c.ci_low is None or c.ci_high is None:
        return "no interval" if c.lexsem is not None else ""
    return f"[{c.ci_low:.2f}, {c.ci_high:.2f}]"


def summary(comparisons: Sequence[Comparison]) -> str:
    """`8 cells compared: 8 as printed, 0 outside the interval; 125 not run (11 rows)`."""
    done = [c for c in comparisons if c.status == "compared"]
    parts = [
        f"{len(done)} cell{'s' * (len(done) != 1)} compared: "
        f"{sum(bool(c.as_printed) for c in done)} as printed, "
        f"{sum(bool(c.outside) for c in done)} outside the run's interval"
    ]
    for status in ("not run", "failed", "no result"):
        some = [c for c in comparisons if c.status == status]
        if some:
            rows = len({c.model for c in some})
            parts.append(f"{len(some)} {status} ({rows} row{'s' * (rows != 1)})")
    return "; ".join(parts)


def unattainable_legend(cells: Sequence[PublishedCell]) -> str:
    """`† no k/n over the public items gives this value ... (n: swap_obj 245)`: the legend of
    the marked `cells`, naming their n."""
    ns = ", ".join(dict.fromkeys(c.subsets for c in cells))
    return (
        f"{MARK} no k/n over the public items gives this value at the paper's precision "
        f"(n: {ns}): no implementation can match it exactly"
    )


def tables(table: PaperTable, comparisons: Sequence[Comparison]) -> list[Table]:
    """The comparison table (left out when no cell was compared), then the rows that did not
    run or failed, with why; the summary line under the first, and the legend of `*` and of
    `†` only when a cell is marked so."""
    title = f"{table.name}: {table.paper}, {table.table}"
    marked = any(c.outside for c in comparisons if c.status == "compared")
    legend = [f"{OUTSIDE} the published number lies outside the run's confidence interval"]
    no_k = unattainable(table)
    daggers = [
        no_k[c.model, c.column]
        for c in comparisons
        if c.status == "compared" and (c.model, c.column) in no_k
    ]
    legends = [*(legend if marked else []), *([unattainable_legend(daggers)] if daggers else [])]
    said = any(activation(row.spec) for row in table.rows)
    act = ["Activation"] if said else []
    note = [ACTIVATION_NOTE] if said else []

    def runs(c: Comparison) -> list[str]:
        return [activation(c.spec) or NO_ACTIVATION] if said else []

    compared = Table(
        title=f"{title} — published vs lexsem",
        headers=["Model", "Benchmark", "Column", "Published", "lexsem", "Δ", "CI", *act],
        notes=[*legends, *note, summary(comparisons)],
    )
    for c in comparisons:
        if c.status != "compared":
            continue
        where = f"{c.column.benchmark} {c.column.task}"
        compared.rows.append(
            [
                c.model,
                where,
                c.column.header,
                f"{c.published:.2f}" + (f" {MARK}" if (c.model, c.column) in no_k else ""),
                _num(c.lexsem),
                delta_text(c),
                ci_text(c),
                *runs(c),
            ]
        )
    out = [compared] if compared.rows else []
    left = Table(
        title=f"{table.name}: rows not compared",
        headers=["Model", "Spec", "Why", *act],
        notes=[] if compared.rows else [*note, summary(comparisons)],
    )
    seen: set[tuple[str, str]] = set()
    for c in comparisons:
        if c.status == "compared" or (c.model, c.why or "") in seen:
            continue
        seen.add((c.model, c.why or ""))
        why = f"needs {c.why}" if c.status == "not run" else f"{c.status}: {c.why}"
        left.rows.append([c.model, c.spec or "", why, *runs(c)])
    if left.rows or not out:
        out.append(left)
    return out


def to_markdown_text(table: PaperTable, comparisons: Sequence[Comparison]) -> str:
    return TABLE_MARKS["md"] + to_markdown(tables(table, comparisons))


def to_csv_text(table: PaperTable, comparisons: Sequence[Comparison]) -> str:
    """One line per cell, numbers unrounded."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    checked = {(p.model, p.column): p for p in check_table(table)}
    for c in comparisons:
        col = c.column
        p = checked.get((c.model, col))
        n = "" if p is None or not p.ns else "+".join(map(str, p.ns)) if p.mean == "macro" else p.n
        can = "" if p is None or p.attainable is None else str(p.attainable).lower()
        outside = "" if c.outside is None else str(c.outside).lower()
        w.writerow(
            [
                table.name, c.model, c.spec or "", col.benchmark, col.task, col.metric,
                col.subset, col.header, c.published, _num(c.lexsem, ".6f"),
                _num(c.delta, ".6f"), _num(c.ci_low, ".6f"), _num(c.ci_high, ".6f"), outside,
                c.status, c.why or "", activation(c.spec) or "", n, can,
            ]
        )  # fmt: skip
    return buf.getvalue()

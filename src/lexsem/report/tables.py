"""Paper-style tables from run records: rows are models, columns are subsets or metrics.

One table per (benchmark, task). With several subsets there is one table per metric whose
columns are the subsets followed by the micro and macro averages (SugarCrepe++ Table 16 layout);
with a single subset the columns are the task's metrics (VISLA Tables 2-3 layout). Quad
benchmarks (BiVLC, Winoground) share one table with every metric in the papers' order on all
items and the main scores per type (BiVLC Tables 3-4), followed by per-subset tables of the three
main scores. Titles never repeat a name (`synthetic — TOT`, not `TOT: TOT`).

A run given twice is one row; a run is a row only of the tables it has results in; the tie note
under a table gives each model's own count.

Extra aggregates (subsets named `_<name>`, e.g. SugarCrepe's `_replace`) are columns after the
subsets. One whose results carry a `label` (what it is, in words: ARO's paper preset) gets a
readable header with a marker, `vg_relation macro [1]`, and its label as a footnote `[1] ...` in
Markdown, LaTeX and HTML (there also as the header's tooltip); in CSV the label is appended to the
column name. Unlabelled aggregates keep their plain name (`_replace` -> `replace`).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lexsem.errors import LexsemError
from lexsem.report.labels import run_labels
from lexsem.results.samples import answers_a_sample
from lexsem.results.schema import MetricResult, RunRecord
from lexsem.stats.bootstrap import MACRO, MICRO
from lexsem.tasks.catalog import find_task

_LABELS = {
    MICRO: "micro",
    MACRO: "macro",
    "tot": "TOT",
    "t2t": "T2T",
    "p1n": "P1-N",
    "p2n": "P2-N",
    "itt": "ITT",
    "i2t": "I2T",
    "yesno": "Yes/No",
}

# Quad tasks: the column order of the papers' tables (BiVLC Tables 3-4: I2T, T2I, Group, then
# the four directional scores; Winoground §3: text, image and group score), and the metrics that
# also get a table (and bars) per subset: the three main scores.
QUAD_ORDER: dict[str, tuple[str, ...]] = {
    "bivlc": ("i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"),
    "winoground": ("text", "image", "group"),
}
QUAD_MAIN: dict[str, tuple[str, ...]] = {k: v[:3] for k, v in QUAD_ORDER.items()}


def label(name: str, task: str | None = None) -> str:
    """How a task, metric or subset is shown; with `task`, its metrics get the paper's names
    (`Task.labels`: `Group`, `Ipos2T`, `P1 vs N`, ...)."""
    if task is not None:
        spec = find_task(task)
        if spec is not None and name in spec.labels:
            return spec.labels[name]
    return _LABELS.get(name, name)


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # column index -> what that column (a labelled extra aggregate) is, in words; renderers mark
    # its header and show the label as a footnote (see `footnoted`)
    column_labels: dict[int, str] = field(default_factory=dict)

    def footnoted(self) -> tuple[list[str], list[str]]:
        """(headers with a ` [k]` marker on each labelled column, the footnotes `[k] label`)."""
        headers, footnotes = list(self.headers), []
        for k, (j, text) in enumerate(sorted(self.column_labels.items()), 1):
            headers[j] = f"{headers[j]} [{k}]"
            footnotes.append(f"[{k}] {text}")
        return headers, footnotes


@dataclass
class TableGroup:
    """The tables of one or more (benchmark, task) results, shown together (one HTML section)."""

    title: str
    keys: list[tuple[str, str]]  # the (benchmark, task) pairs whose results they show
    tables: list[Table] = field(default_factory=list)


def _cell(r: MetricResult | None, ci: bool, sample: bool = False) -> str:
    """`60.00`, with `(scored/total)` when some of the row's items were not scored (`60.00
    (5/245)`) and the interval with `ci` (`60.00 (5/245) [52.1, 68.0]`); a `sample` run's
    number (a human study: `lexsem.results.samples`) always with its n (`100.00 (n=4)`)."""
    if r is None:
        return ""
    text = f"{r.accuracy:.2f}"
    if not r.complete:
        text += f" ({r.items_scored}/{r.items_total})"
    elif sample:
        text += f" (n={r.n})"
    if ci and r.ci_low is not None and r.ci_high is not None:
        text += f" [{r.ci_low:.1f}, {r.ci_high:.1f}]"
    return text


def unique_runs(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs with each run id once (the first given): a run listed twice is one run."""
    seen: set[str] = set()
    out = []
    for r in runs:
        if r.run_id not in seen:
            seen.add(r.run_id)
            out.append(r)
    return out


def result_groups(runs: Sequence[RunRecord]) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(benchmark, task) → metric → subsets: the subsets in the benchmark's own order
    (`subset_order`), whichever run is given first, then the aggregates in first-seen order."""
    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for run in runs:
        for r in run.results:
            subsets = groups.setdefault((r.benchmark, r.task), {}).setdefault(r.metric, [])
            if r.subset not in subsets:
                subsets.append(r.subset)
    for (bench, _), metrics in groups.items():
        for metric, subsets in metrics.items():
            metrics[metric] = subset_order(bench, subsets)
    return groups


def subset_order(bench: str, subsets: Sequence[str]) -> list[str]:
    """Plain subsets in the registered benchmark's order (alphabetical for a user's benchmark),
    then the aggregates (`_micro`, `_macro`, groups) in the order given."""
    from lexsem.benchmarks import catalog as registry

    try:
        known = [s.name for s in registry.get(bench).subsets]
    except LexsemError:
        known = []
    rank = {name: i for i, name in enumerate(known)}
    plain = sorted(
        (s for s in subsets if not s.startswith("_")), key=lambda s: (rank.get(s, len(rank)), s)
    )
    return plain + [s for s in subsets if s.startswith("_")]


def aggregate_labels(runs: Sequence[RunRecord]) -> dict[tuple[str, str, str], str]:
    """(benchmark, task, subset) -> the label of a labelled extra aggregate; several distinct
    labels of one aggregate (runs of different versions) are joined with " / "."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for run in runs:
        for r in run.results:
            if r.label and r.subset.startswith("_"):
                texts = seen.setdefault((r.benchmark, r.task, r.subset), [])
                if r.label not in texts:
                    texts.append(r.label)
    return {key: " / ".join(texts) for key, texts in seen.items()}


def aggregate_header(subset: str, subsets: Sequence[str]) -> str:
    """A readable header for an extra aggregate: `_vg_relation_macro` -> `vg_relation macro`
    when `vg_relation` is one of the table's subsets, else the name without its `_`."""
    name = subset.lstrip("_")
    for s in sorted((s for s in subsets if not s.startswith("_")), key=len, reverse=True):
        if name.startswith(s + "_"):
            return f"{s} {name[len(s) + 1 :].replace('_', ' ')}"
    return name


def _subset_columns(
    subsets: Sequence[str], labels: dict[str, str]
) -> tuple[list[str], dict[int, str]]:
    """Headers (after "model") for the subsets, and the labels of labelled aggregate columns."""
    headers, column_labels = [], {}
    for j, s in enumerate(subsets, 1):
        if s in labels:
            headers.append(aggregate_header(s, subsets))
            column_labels[j] = labels[s]
        else:
            headers.append(label(s))
    return headers, column_labels


def section_title(bench: str, task: str) -> str:
    """`synthetic — TOT`; a task named as its benchmark (`aro_vg`, `bivlc`) is not repeated."""
    return bench if task == bench else f"{bench} — {label(task)}"


def table_title(bench: str, task: str, metric: str | None = None, subset: str | None = None) -> str:
    """A table title without repetition: `synthetic — TOT` (not `TOT: TOT`), `aro_vg: acc`."""
    title = section_title(bench, task)
    if metric is not None and label(metric, task).lower() != label(task).lower():
        title += f": {label(metric, task)}"
    if subset is not None and subset not in (bench, "all"):
        title += f" ({label(subset)})"
    return title


# (run, [(benchmark, task, metric, subset)] of a table's cells): the cells' own ties, counted
# on subsets only (every aggregate — micro, macro, `_<group>` — repeats its subsets' ties)
Cells = list[tuple[str, str, str, str]]


def _ties(run: RunRecord, cells: Cells) -> int:
    want = {(b, k, m) for b, k, m, _ in cells}
    return sum(
        r.ties
        for r in run.results
        if (r.benchmark, r.task, r.metric) in want and not r.subset.startswith("_")
    )


def _tie_note(rows: Sequence[tuple[str, RunRecord]], cells: Cells) -> list[str]:
    """One note giving each model's ties in this table (none when no model has any)."""
    counts = [(lab, run, _ties(run, cells)) for lab, run in rows]
    if not any(n for _, _, n in counts):
        return []
    policies = {run.config.tie_policy for _, run, _ in counts}
    if len(policies) == 1:
        how = "hits" if policies == {"lenient"} else "failures"
        parts = ", ".join(f"{lab} {n}" for lab, _, n in counts)
        return [f"tied item-metric comparisons per model (counted as {how}): {parts}"]
    parts = ", ".join(
        f"{lab} {n} (as {'hits' if run.config.tie_policy == 'lenient' else 'failures'})"
        for lab, run, n in counts
    )
    return [f"tied item-metric comparisons per model: {parts}"]


def _fill(
    title: str,
    headers: list[str],
    cells: Cells,
    runs: Sequence[RunRecord],
    labels: Sequence[str],
    ci: bool,
) -> Table:
    """A table whose columns are `cells`, one row per run holding at least one of them."""
    t = Table(title, ["model", *headers])
    rows = []
    for lab, run in zip(labels, runs, strict=True):
        idx = {(r.benchmark, r.task, r.metric, r.subset): r for r in run.results}
        values = [_cell(idx.get(c), ci, answers_a_sample(run)) for c in cells]
        if any(values):
            t.rows.append([lab, *values])
            rows.append((lab, run))
    t.notes = _tie_note(rows, cells) + _coverage_note(rows, cells) + _dtype_note(rows)
    return t


def _dtype_note(rows: Sequence[tuple[str, RunRecord]]) -> list[str]:
    """A note naming the models run in bf16 or fp16 (run.json `model.dtype_note`): their hits
    may differ from an fp32 run of the same model (none when every run is fp32)."""
    reduced = [f"{lab} ({run.model.dtype})" for lab, run in rows if run.model.dtype_note]
    if not reduced:
        return []
    return [
        f"run in reduced precision: {', '.join(reduced)}; hits may differ from an fp32 run of "
        "the same model and data (lexsem compare of the two runs counts the items)"
    ]


def _coverage_note(rows: Sequence[tuple[str, RunRecord]], cells: Cells) -> list[str]:
    """A note when some cell is over fewer items than its subsets hold (none otherwise)."""
    want = set(cells)
    partial = any(
        not r.complete
        for _, run in rows
        for r in run.results
        if (r.benchmark, r.task, r.metric, r.subset) in want
    )
    if not partial:
        return []
    return [
        "(scored/total): not every item was scored — the others were skipped (an image "
        "missing, unreadable or too large), left out (incomplete, or of an unknown type) or "
        "not answered (a file of recorded answers); the accuracy is over the scored items only "
        "(run.json: skipped, dropped, notices, recorded)"
    ]


def coverage_summary(record: RunRecord) -> str | None:
    """`coverage below 100%: sugarcrepe_pp ITT 5 of 245 items scored` for the (benchmark,
    task) pairs of a run with items not scored; None when every item was."""
    parts = []
    for (bench, task), metrics in result_groups([record]).items():
        metric = next(iter(metrics))
        rows = [
            r for r in record.results if (r.benchmark, r.task, r.metric) == (bench, task, metric)
        ]
        whole = [r for r in rows if r.subset == MICRO] or [
            r for r in rows if not r.subset.startswith("_")
        ]
        if all(r.complete for r in whole):
            continue
        scored = sum(r.items_scored or 0 for r in whole)
        total = sum(r.items_total or 0 for r in whole)
        parts.append(f"{bench} {label(task)} {scored} of {total} items scored")
    if not parts:
        return None
    reasons = record.timings.image_skip_reasons
    why = ", ".join(f"{n} {_REASON.get(k, k)}" for k, n in sorted(reasons.items()))
    skipped = f" (images skipped: {why})" if why else ""
    return f"coverage below 100%: {'; '.join(parts)}{skipped}"


_REASON = {"too-large": "over the pixel limit (--max-image-pixels)", "undecodable": "not decodable"}


def _subset_metrics(task: str, metrics: Sequence[str]) -> list[str]:
    """The metrics of `task` that get a table per subset (quad tasks: the three main ones, in
    the papers' order)."""
    main = QUAD_MAIN.get(task)
    return list(metrics) if main is None else [m for m in main if m in metrics]


def _plain_tables(
    bench: str,
    task: str,
    metrics: dict[str, list[str]],
    runs: Sequence[RunRecord],
    labels: Sequence[str],
    agg: dict[tuple[str, str, str], str],
    ci: bool,
) -> list[Table]:
    first_subsets = next(iter(metrics.values()))
    if len(first_subsets) == 1:
        sub = first_subsets[0]
        cells = [(bench, task, m, sub) for m in metrics]
        heads = [label(m, task) for m in metrics]
        return [_fill(table_title(bench, task, subset=sub), heads, cells, runs, labels, ci)]
    here = {s: text for (b, k, s), text in agg.items() if (b, k) == (bench, task)}
    tables = []
    for metric in _subset_metrics(task, list(metrics)):
        subsets = metrics[metric]
        headers, column_labels = _subset_columns(subsets, here)
        cells = [(bench, task, metric, s) for s in subsets]
        t = _fill(table_title(bench, task, metric), headers, cells, runs, labels, ci)
        t.column_labels = column_labels
        tables.append(t)
    return tables


def _quad_table(
    keys: Sequence[tuple[str, str]],
    groups: dict[tuple[str, str], dict[str, list[str]]],
    runs: Sequence[RunRecord],
    labels: Sequence[str],
    ci: bool,
) -> Table:
    """One table for every quad benchmark of the runs (BiVLC, Winoground), all metrics in the
    papers' order on all items, then the three main scores per type (BiVLC Table 4)."""
    headers: list[str] = []
    cells: Cells = []
    types: list[str] = []
    for bench, task in keys:
        metrics = groups[(bench, task)]
        order = [m for m in QUAD_ORDER.get(task, tuple(metrics)) if m in metrics]
        subsets = next(iter(metrics.values()))
        plain = [s for s in subsets if not s.startswith("_")]
        overall = MICRO if MICRO in subsets else plain[0]
        prefix = f"{bench} " if len(keys) > 1 else ""
        headers += [prefix + label(m, task) for m in order]
        cells += [(bench, task, m, overall) for m in order]
        for agg in (s for s in subsets if s.startswith("_") and s not in (MICRO, MACRO)):
            types.append(agg.lstrip("_").upper())
            main = [m for m in QUAD_MAIN.get(task, tuple(order[:3])) if m in metrics]
            headers += [f"{prefix}{agg.lstrip('_').upper()} {label(m, task)}" for m in main]
            cells += [(bench, task, m, agg) for m in main]
    names = " and ".join(b for b, _ in keys)
    title = f"{names} — all metrics, all items" + (" and per type" if types else "")
    t = _fill(title, headers, cells, runs, labels, ci)
    sources = [
        _QUAD_SOURCES[k] for k in dict.fromkeys(task for _, task in keys) if k in _QUAD_SOURCES
    ]
    pooled = f" {', '.join(dict.fromkeys(types))}: all items of the type, pooled." if types else ""
    t.notes.insert(0, "Columns as in the papers: " + "; ".join(sources) + "." + pooled)
    return t


_QUAD_SOURCES = {
    "bivlc": "I2T, T2I, Group, then the four directional scores (BiVLC: Extending "
    "Vision-Language Compositionality Evaluation with Text-to-Image Retrieval, §5.3, Tables 3-4)",
    "winoground": "text, image and group scores (Winoground: Probing Vision and Language Models "
    "for Visio-Linguistic Compositionality, §3)",
}


def table_groups(runs: Sequence[RunRecord], *, ci: bool = False) -> list[TableGroup]:
    """The tables for a set of runs, grouped per (benchmark, task) in first-seen order; every
    quad benchmark (BiVLC, Winoground) shares one group whose first table holds all their
    metrics. A run given twice counts once; a run is a row only of the tables it has results
    in. Runs that read different data of a benchmark (files of different sha256,
    `lexsem.results.same_data`) are never rows of one table: each comparable group gets its own
    tables, titled `[data k of n]`, with a note saying why."""
    runs = unique_runs(runs)
    label_of = run_labels(runs)
    agg = aggregate_labels(runs)
    groups = result_groups(runs)
    quads = [k for k in groups if _is_quad(k[1])]
    out: list[TableGroup] = []
    for key, metrics in groups.items():
        bench, task = key
        if key in quads:
            if key != quads[0]:
                continue
            g = TableGroup(" and ".join(b for b, _ in quads), list(quads))
            benches = [b for b, _ in quads]
            for part, labels, mark in _data_split(runs, label_of, benches):
                tables = [_quad_table(quads, groups, part, labels, ci)]
                for b, k in quads:
                    if len(next(iter(groups[(b, k)].values()))) > 1:
                        tables += _plain_tables(b, k, groups[(b, k)], part, labels, agg, ci)
                g.tables += mark(tables)
            out.append(g)
            continue
        g = TableGroup(section_title(bench, task), [key])
        for part, labels, mark in _data_split(runs, label_of, [bench]):
            g.tables += mark(_plain_tables(bench, task, metrics, part, labels, agg, ci))
        out.append(g)
    return out


def _data_split(
    runs: Sequence[RunRecord], label_of: dict[str, str], benches: Sequence[str]
) -> list[tuple[list[RunRecord], list[str], Callable[[list[Table]], list[Table]]]]:
    """(runs, their row labels, a function marking their tables) per group of runs comparable
    on `benches`; one group, unmarked, when all are."""
    from lexsem.results.same_data import comparable_groups

    have = [r for r in runs if any(res.benchmark in benches for res in r.results)]
    parts, why = comparable_groups(have, benches)
    if len(parts) == 1:
        return [(parts[0], [label_of[r.run_id] for r in parts[0]], lambda t: t)]
    names = " and ".join(benches)
    note = (
        f"not comparable with the other tables of {names} ([data k of {len(parts)}]): "
        + "; ".join(why)
        + "; accuracies on different data (a user file of the same name with other content, "
        "another version of a pinned file) are shown apart"
    )

    def marker(k: int) -> Callable[[list[Table]], list[Table]]:
        def mark(tables: list[Table]) -> list[Table]:
            for t in tables:
                t.title += f" [data {k} of {len(parts)}]"
                t.notes.append(note)
            return tables

        return mark

    return [(p, [label_of[r.run_id] for r in p], marker(k)) for k, p in enumerate(parts, 1)]


def _is_quad(task: str) -> bool:
    spec = find_task(task)
    return spec is not None and spec.item_kind == "quad"


def to_markdown(tables: Sequence[Table]) -> str:
    parts = []
    for t in tables:
        headers, footnotes = t.footnoted()
        lines = [
            f"### {t.title}",
            "",
            "| " + " | ".join(headers) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(headers) - 1)) + "|",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in t.rows]
        lines += [f"\n_{n}_" for n in [*footnotes, *t.notes]]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def to_csv(tables: Sequence[Table]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "model", "column", "value"])
    for t in tables:
        headers = [
            f"{h} — {t.column_labels[j]}" if j in t.column_labels else h
            for j, h in enumerate(t.headers)
        ]
        for row in t.rows:
            for h, v in zip(headers[1:], row[1:], strict=True):
                w.writerow([t.title, row[0], h, v])
    return buf.getvalue()


def to_latex(tables: Sequence[Table]) -> str:
    """One booktabs `table` float per table (caption, `tabular`, notes as a footnote-size
    paragraph). LaTeX specials in every cell, header, title and note are escaped. Needs
    `\\usepackage{booktabs}`."""
    specials = {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "|": r"\textbar{}",
    }
    pattern = re.compile("|".join(map(re.escape, specials)))

    def tex(text: str) -> str:
        return pattern.sub(lambda m: specials[m.group(0)], str(text))

    parts = []
    for t in tables:
        ncols = len(t.headers)
        headers, footnotes = t.footnoted()
        lines = [
            r"\begin{table}[htbp]",
            r"\centering",
            rf"\caption{{{tex(t.title)}}}",
            rf"\begin{{tabular}}{{l{'r' * (ncols - 1)}}}",
            r"\toprule",
            " & ".join(tex(h) for h in headers) + r" \\",
            r"\midrule",
        ]
        lines += [" & ".join(tex(c) for c in row) + r" \\" for row in t.rows]
        lines += [r"\bottomrule", r"\end{tabular}"]
        if footnotes or t.notes:
            notes = r"\par ".join(tex(n) for n in [*footnotes, *t.notes])
            lines.append(rf"\par\smallskip{{\footnotesize {notes}\par}}")
        lines.append(r"\end{table}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"

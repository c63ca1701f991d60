"""A self-contained HTML report: one file, no external resources, no JavaScript.

`render_html(title, sections, metadata)` turns a tree of `Section`s (text, `Table`s, PNG
figures, subsections) into one page with a table of contents, the figures embedded as
`data:` URIs and a metadata block. Every string from the caller is HTML-escaped; a
Content-Security-Policy forbids scripts and any request outside the page.

`runs_overview_sections(runs)` and `runs_metadata(runs)` give the page for plain runs:
`render_html("lexsem report", runs_overview_sections(records), runs_metadata(records))`.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from lexsem._version import __version__
from lexsem.errors import LexsemError
from lexsem.report.labels import LABEL_RULE, labels_for
from lexsem.report.tables import (
    QUAD_MAIN,
    Table,
    aggregate_header,
    aggregate_labels,
    coverage_summary,
    label,
    result_groups,
    table_groups,
    table_title,
    unique_runs,
)
from lexsem.results.schema import MetricResult, RunRecord
from lexsem.stats.bootstrap import MACRO, MICRO
from lexsem.tasks import quad
from lexsem.tasks.catalog import BLIND


@dataclass
class Section:
    title: str
    text: str = ""  # plain text: blank lines separate paragraphs, "- " lines make a list
    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)  # (caption, PNG bytes)
    subsections: list[Section] = field(default_factory=list)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
 max-width:1120px;margin:2em auto;padding:0 1.2em;color:#1d1d1f;line-height:1.45;
 overflow-wrap:break-word}
h1{font-size:1.7em;border-bottom:2px solid #ddd;padding-bottom:.3em}
h2{font-size:1.35em;border-bottom:1px solid #e5e5e5;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.15em;margin-top:1.6em}h4,h5,h6{font-size:1em}
nav.toc{background:#f6f7f9;border:1px solid #e3e5e8;border-radius:6px;padding:.6em 1.2em}
nav.toc ul{margin:.15em 0;padding-left:1.4em;list-style:none}nav.toc>ul{padding-left:.2em}
a{color:#0b5cad;text-decoration:none}a:hover{text-decoration:underline}
table{border-collapse:separate;border-spacing:0;margin:1em 0;font-size:.9em}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
caption .cap{display:inline-block;position:sticky;left:0;max-width:min(calc(100vw - 3em),1080px)}
th,td{padding:.25em .7em;border-bottom:1px solid #e3e3e3;vertical-align:top}
thead th{border-bottom:2px solid #999;text-align:left}tbody th{text-align:left;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
td.num span{white-space:nowrap}td.num .ci{display:block;color:#555;font-size:.88em}
tbody tr:nth-child(even){background:#fafafa}
.table-wrap{overflow-x:auto;max-width:100%}
tr>:first-child{position:sticky;left:0;z-index:1;background:#fff;min-width:10em;max-width:16em;
 overflow-wrap:anywhere;box-shadow:inset -1px 0 #e3e3e3}
tbody tr:nth-child(even)>:first-child{background:#fafafa}
p.note{font-size:.85em;color:#555;margin:.2em 0 1em}
figure{margin:1.2em 0}figure img{max-width:100%;height:auto;border:1px solid #eee;
 box-sizing:border-box}
figcaption{font-size:.88em;color:#444;margin-top:.3em}
dl.meta dt{font-weight:600;margin-top:.6em}dl.meta dd{margin-left:1.2em}
details>summary{cursor:pointer;color:#0b5cad;font-size:.9em}
pre{background:#f6f7f9;border:1px solid #e3e5e8;border-radius:4px;padding:.6em;
 overflow-x:auto;font-size:.82em}
code{font-size:.9em}
@media (max-width:900px){tr>:first-child{min-width:8em;max-width:11em}}
""".strip()

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _slug(title: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return s[:40].rstrip("-")


def _breakable(text: Any) -> str:
    """Escaped text with a line-break opportunity (`<wbr>`) after each `/ _ . :` of a run of
    more than 16 characters, so that paths, hub ids and item ids wrap at their separators
    rather than overflow or break inside words."""
    return re.sub(r"[^\s&;]{17,}", lambda m: re.sub(r"([/_.:])", r"\1<wbr>", m.group(0)), _e(text))


_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")


def _linked(render: Any) -> Any:
    """`render` with `[text](http://...)` spans as links (`lexsem explore`'s slices)."""

    def out(text: str) -> str:
        parts, at = [], 0
        for m in _LINK.finditer(text):
            parts += [render(text[at : m.start()]) if m.start() > at else "",
                      f'<a href="{_e(m.group(2))}">{render(m.group(1))}</a>']  # fmt: skip
            at = m.end()
        return "".join(parts) + (render(text[at:]) if at < len(text) or not parts else "")

    return out


def _inline(text: Any, plain: Any = None) -> str:
    """Escaped text whose `backticked` spans are inline code (`<code>`) and `[text](URL)` spans
    links; `plain` renders the rest (default: escaped). A lone backtick is kept as a
    character."""
    render = _linked(plain or _e)
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one is text
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return "".join(
        f"<code>{_e(p)}</code>" if k % 2 else render(p) for k, p in enumerate(parts) if p or not k
    )


def _is_num(cell: str) -> bool:
    """A number, with its coverage `(5/245)` and interval `[lo, hi]` when shown."""
    return bool(
        re.fullmatch(r"[-+]?\d[\d.,]*(e[-+]?\d+)?(%)?( \(\d+/\d+\))?( \[[^\]]*\])?|", cell.strip())
    )


def _text_html(text: str) -> str:
    out = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
        if not lines:
            continue
        if all(ln.startswith("- ") for ln in lines):
            out.append("<ul>" + "".join(f"<li>{_inline(ln[2:])}</li>" for ln in lines) + "</ul>")
        else:
            out.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "\n".join(out)


def _table_html(t: Table, number: int) -> str:
    ncols = len(t.headers)
    numeric = [
        j > 0 and all(_is_num(row[j]) for row in t.rows if j < len(row)) for j in range(ncols)
    ]

    def cls(j: int) -> str:
        return ' class="num"' if j < ncols and numeric[j] else ""

    headers, footnotes = t.footnoted()

    def tip(j: int) -> str:  # a labelled aggregate column: its label as the header's tooltip
        return f' title="{_e(t.column_labels[j])}"' if j in t.column_labels else ""

    head = "".join(f"<th{cls(j)}{tip(j)} scope=col>{_e(h)}</th>" for j, h in enumerate(headers))
    body = []
    for row in t.rows:
        cells = [
            f"<th scope=row>{_breakable(c)}</th>" if j == 0 else f"<td{cls(j)}>{_cell_html(c)}</td>"
            for j, c in enumerate(row)
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(f'<p class="note">{_inline(n, _breakable)}</p>' for n in [*footnotes, *t.notes])
    return (
        f'<div class="table-wrap"><table>\n<caption><span class="cap">Table {number}. '
        f"{_e(t.title)}</span></caption>\n"
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"
        f"</div>\n{notes}"
    )


def _cell_html(cell: str) -> str:
    """A cell; `value [low, high]` is two unbreakable parts, the interval on a line of its own
    under the value, so that wide tables stay narrow; other text wraps at path separators."""
    m = re.fullmatch(r"(\S+(?: \(\d+/\d+\))?) (\[[^\]]*\])", cell)
    if m is None:
        return _breakable(cell)
    return f'<span class="v">{_e(m.group(1))}</span> <span class="ci">{_e(m.group(2))}</span>'


def _figure_html(caption: str, png: bytes, number: int) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{_e(caption)}">'
        f"<figcaption>Figure {number}. {_inline(caption)}</figcaption></figure>"
    )


def _json(value: Any, indent: int = 0, width: int = 96) -> str:
    """JSON, indented, with every container that fits on one line written on one line."""
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if not isinstance(value, (Mapping, list, tuple)) or indent + len(flat) <= width or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, Mapping):
        inner = [
            f"{pad}{json.dumps(str(k), ensure_ascii=False)}: {_json(v, indent + 2, width)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(inner) + "\n" + " " * indent + "}"
    inner = [pad + _json(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(inner) + "\n" + " " * indent + "]"


def _meta_value(value: Any) -> str:
    """A scalar as code; a mapping or list as indented JSON, collapsed (`<details>`) under a
    line saying what it holds."""
    if isinstance(value, (Mapping, list, tuple)):
        text = _json(value)
        if isinstance(value, Mapping):
            what = (
                f"{len(value)} field{'' if len(value) == 1 else 's'}: "
                + ", ".join(str(k) for k in list(value)[:6])
                + (", ..." if len(value) > 6 else "")
            )
        else:
            what = f"{len(value)} value{'' if len(value) == 1 else 's'}"
        return f"<details><summary>{_e(what)} (JSON)</summary><pre>{_e(text)}</pre></details>"
    return f"<code>{_e(value)}</code>" if value is not None else "<code>null</code>"


def render_html(
    title: str, sections: Sequence[Section], metadata: Mapping[str, Any] | None = None
) -> str:
    """One self-contained HTML page: title, table of contents, sections, metadata block."""
    counters = {"table": 0, "figure": 0}
    used: set[str] = set()
    toc: list[str] = []
    body: list[str] = []

    def anchor(number: str, title_: str) -> str:
        base = f"s{number.replace('.', '-')}"
        slug = _slug(title_)
        a = f"{base}-{slug}" if slug else base
        while a in used:
            a += "-x"
        used.add(a)
        return a

    def walk(secs: Sequence[Section], prefix: str, depth: int) -> None:
        toc.append("<ul>")
        for k, sec in enumerate(secs, 1):
            number = f"{prefix}{k}"
            a = anchor(number, sec.title)
            toc.append(f'<li><a href="#{a}">{number} {_e(sec.title)}</a>')
            h = min(depth + 2, 6)
            body.append(f'<section id="{a}">\n<h{h}>{number} {_e(sec.title)}</h{h}>')
            if sec.text:
                body.append(_text_html(sec.text))
            for t in sec.tables:
                counters["table"] += 1
                body.append(_table_html(t, counters["table"]))
            for caption, png in sec.figures:
                counters["figure"] += 1
                body.append(_figure_html(caption, png, counters["figure"]))
            if sec.subsections:
                walk(sec.subsections, f"{number}.", depth + 1)
            body.append("</section>")
            toc.append("</li>")
        toc.append("</ul>")

    walk(sections, "", 0)
    if metadata:
        toc.insert(-1, '<li><a href="#metadata">Metadata</a></li>')
        items = "\n".join(f"<dt>{_e(k)}</dt><dd>{_meta_value(v)}</dd>" for k, v in metadata.items())
        body.append(
            f'<section id="metadata">\n<h2>Metadata</h2>\n<dl class="meta">\n{items}\n</dl>\n'
            "</section>"
        )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="generator" content="lexsem {_e(__version__)}">',
            f"<title>{_e(title)}</title>",
            f"<style>\n{_CSS}\n</style>",
            "</head>",
            "<body>",
            f"<h1>{_e(title)}</h1>",
            '<nav class="toc" aria-label="Contents">',
            "<strong>Contents</strong>",
            *toc,
            "</nav>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


# --- plain runs -------------------------------------------------------------------------------

# Chance (%) of each (task, metric) for random, tie-free scores: a triplet is a hit when one of
# three exchangeable scores is the largest (or smallest), a single comparison is a coin flip.
_CHANCE: dict[tuple[str, str], float] = {
    **{(t, t): 100.0 / 3.0 for t in ("tot", "t2t", "itt", "i2t")},
    **{(t, m): 50.0 for t in ("t2t",) for m in ("p1n", "p2n")},
    **{(t, f"{t}_{m}"): 50.0 for t in ("itt", "i2t") for m in ("p1n", "p2n")},
    ("pair", "acc"): 50.0,
    ("aro_vg", "acc"): 50.0,
    ("aro_order", "acc"): 20.0,
    **{("bivlc", m): v for m, v in quad.CHANCE.items()},
    **{("winoground", m): quad.CHANCE[b] for m, b in quad.WINOGROUND_NAMES.items()},
}


def chance_of(bench: str, task: str, metric: str) -> float | None:
    """Chance (%) of a metric for random, tie-free scores; a blind scorer's chance depends on
    its benchmark's items (triplet 1/3, pair 1/2, multi-caption 1 / captions); None when not
    known (a user's file)."""
    if task != BLIND:
        return _CHANCE.get((task, metric))
    from lexsem.benchmarks import catalog as registry

    try:
        kind = registry.get(bench).item_kind
    except LexsemError:
        return None
    if kind == "multi":
        return _CHANCE.get((bench, "acc"))
    return {"triplet": 100.0 / 3.0, "pair": 50.0}.get(kind)


def _records(runs: Sequence[Any]) -> list[RunRecord]:
    return [getattr(r, "record", r) for r in runs]  # a `Run` or its `RunRecord`


def _bars(
    runs: Sequence[RunRecord], row_labels: list[str], bench: str, task: str, metric: str, subsets
) -> tuple[str, bytes]:
    from lexsem.report.plots import accuracy_bars

    order = [s for s in subsets if s not in (MICRO, MACRO)] + [
        s for s in (MICRO, MACRO) if s in subsets
    ]
    values, lows, highs = {}, {}, {}
    for lab, run in zip(row_labels, runs, strict=True):
        idx: dict[str, MetricResult] = {
            r.subset: r
            for r in run.results
            if (r.benchmark, r.task, r.metric) == (bench, task, metric)
        }
        if not idx:
            continue
        values[lab] = [idx[s].accuracy if s in idx else None for s in order]
        lows[lab] = [idx[s].ci_low if s in idx else None for s in order]
        highs[lab] = [idx[s].ci_high if s in idx else None for s in order]
    chance = chance_of(bench, task, metric)
    title = table_title(bench, task, metric)
    labelled = {
        s: text
        for (b, k, s), text in aggregate_labels(runs).items()
        if (b, k) == (bench, task) and s in order
    }
    ticks = [aggregate_header(s, order) if s in labelled else label(s) for s in order]
    png = accuracy_bars(ticks, values, lows, highs, title, chance=chance)
    caption = (
        f"{title}: accuracy (%) per subset and the "
        "micro / macro averages, one bar per model; whiskers: bootstrap confidence intervals"
        + ("; dashed: chance for random scores" if chance is not None else "")
        + "".join(f"; {aggregate_header(s, order)}: {text}" for s, text in labelled.items())
        + "."
    )
    return caption, png


def _when(created_at: str) -> str:
    """`2026-11-25T03:41:36+00:00` as `2026-11-25 03:41 UTC` (to the minute, in UTC: a table
    cell that does not break into five lines; the exact time is in the metadata block)."""
    from datetime import datetime

    try:
        t = datetime.fromisoformat(created_at)
    except ValueError:
        return created_at
    if t.tzinfo is not None:
        t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M") + (" UTC" if t.tzinfo is not None else "")


def _runs_section(runs: Sequence[RunRecord], row_labels: list[str]) -> Section:
    runs_table = Table(
        "Runs",
        [
            "model",
            "run id",
            "spec",
            "fingerprint key",
            "benchmarks",
            "tasks",
            "ties",
            "seed",
            "n_boot",
            "lexsem",
            "created",
        ],
    )
    for lab, r in zip(row_labels, runs, strict=True):
        benches = ", ".join(f"{b.name} ({sum(b.items.values())})" for b in r.benchmarks)
        runs_table.rows.append(
            [lab, r.run_id, r.model.spec, r.model.fingerprint_key[:16], benches,
             ", ".join(r.config.tasks), r.config.tie_policy, str(r.config.seed),
             str(r.config.n_boot), r.lexsem_version, _when(r.created_at)]
        )  # fmt: skip
    data_table = Table(
        "Data files", ["benchmark", "subset", "items", "file", "sha256 (first 16)", "runs"]
    )
    seen: dict[tuple[str, str], dict[str, list[int]]] = {}
    info: dict[tuple[str, str], tuple[int, str]] = {}
    for k, r in enumerate(runs):
        for b in r.benchmarks:
            for f in b.files:
                seen.setdefault((b.name, f.subset), {}).setdefault(f.sha256, []).append(k)
                info.setdefault((b.name, f.subset), (b.items.get(f.subset, 0), f.file or ""))
    conflicts = []
    for (bench, sub), by_sha in seen.items():
        n, file = info[(bench, sub)]
        for sha, ks in by_sha.items():
            data_table.rows.append([bench, sub, str(n), file, sha[:16], str(len(ks))])
        if len(by_sha) > 1:
            conflicts.append(f"{bench}/{sub}")
    if conflicts:
        data_table.notes.append("different data (sha256) across runs for: " + ", ".join(conflicts))
    notes = _data_notes(runs, row_labels)
    for what, values in (
        ("tie policies", {r.config.tie_policy for r in runs}),
        ("lexsem versions", {r.lexsem_version for r in runs}),
        ("bootstrap seeds", {str(r.config.seed) for r in runs}),
    ):
        if len(values) > 1:
            notes.append(f"- The runs differ in {what}: {', '.join(sorted(values))}.")
    text = (
        "One row per run; the full model fingerprints, configurations and environments are in "
        "the metadata block at the end. " + LABEL_RULE
    )
    if notes:
        text += "\n\n" + "\n".join(notes)
    return Section("Runs", text, [runs_table, data_table])


def _data_notes(runs: Sequence[RunRecord], row_labels: list[str]) -> list[str]:
    """A line per run below 100% coverage and per warning about its data (partial snapshot,
    subsets or rows left out), as `lexsem eval` printed them."""
    notes = []
    for lab, r in zip(row_labels, runs, strict=True):
        summary = coverage_summary(r)
        if summary is not None:
            notes.append(f"- {lab}: {summary}.")
        notes += [f"- {lab}: {n.message}." for b in r.benchmarks for n in b.notices]
    return notes


def _plots_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _group_figures(
    recs: Sequence[RunRecord],
    row_labels: list[str],
    keys: Sequence[tuple[str, str]],
    groups: Mapping[tuple[str, str], Mapping[str, list[str]]],
) -> list[tuple[str, bytes]]:
    """Bars over models x subsets for each metric with several subsets (quad tasks: the three
    main scores)."""
    figures = []
    for bench, task in keys:
        metrics = groups[(bench, task)]
        main = QUAD_MAIN.get(task)
        for metric in list(metrics) if main is None else [m for m in main if m in metrics]:
            subsets = metrics[metric]
            if len([s for s in subsets if not s.startswith("_")]) > 1:
                figures.append(_bars(recs, row_labels, bench, task, metric, subsets))
    return figures


def runs_overview_sections(runs: Sequence[RunRecord]) -> list[Section]:
    """Sections for plain runs: per (benchmark, task) — every quad benchmark together — the
    paper-layout tables of `table_groups(runs, ci=True)` and, per metric with several subsets,
    a bar chart over models x subsets with CIs; then a "Runs" section (ids, specs,
    fingerprints, data sha256). A run given twice is shown once.

    Figures need matplotlib (the `web` extra); without it the tables come alone, with a note.
    """
    recs = unique_runs(_records(runs))
    row_labels = labels_for(recs)
    plots = _plots_available()
    confs = {r.config.confidence for r in recs}
    conf = f"{next(iter(confs)) * 100:g}% " if len(confs) == 1 else ""
    groups = result_groups(recs)
    subs = []
    for g in table_groups(recs, ci=True):
        sec = Section(g.title, tables=g.tables)
        if plots:
            sec.figures += _group_figures(recs, row_labels, g.keys, groups)
        subs.append(sec)
    text = (
        f"Accuracy (%) per model; in brackets the {conf}percentile-bootstrap confidence interval "
        "(items resampled within each subset). micro: all items pooled; macro: mean of subsets."
    )
    if not plots:
        text += "\n\nFigures need matplotlib: pip install 'lexsem[web]'."
    if not subs:
        text = "These runs hold no results."
    return [Section("Results", text, subsections=subs), _runs_section(recs, row_labels)]


def runs_metadata(runs: Sequence[RunRecord]) -> dict[str, Any]:
    """The metadata block for plain runs: per run its id, model (spec, fingerprint), data
    sha256, configuration (tasks, tie policy, seed, bootstrap), versions and environment."""
    recs = unique_runs(_records(runs))
    meta: dict[str, Any] = {"report made by lexsem": __version__, "runs": len(recs)}
    for r in recs:
        meta[f"run {r.run_id}"] = {
            "created_at": r.created_at,
            "lexsem_version": r.lexsem_version,
            "schema_version": r.schema_version,
            "model": r.model.model_dump(),
            "config": r.config.model_dump(),
            "data_sha256": {b.name: {f.subset: f.sha256 for f in b.files} for b in r.benchmarks},
            "items": {b.name: b.items for b in r.benchmarks},
            "dropped": {b.name: b.dropped for b in r.benchmarks if b.dropped},
            "environment": r.environment,
        }
        skipped = {b.name: b.skipped for b in r.benchmarks if b.skipped}
        notices = [n.message for b in r.benchmarks for n in b.notices]
        if skipped:
            meta[f"run {r.run_id}"]["skipped"] = skipped
        if notices:
            meta[f"run {r.run_id}"]["data notices"] = notices
    return meta

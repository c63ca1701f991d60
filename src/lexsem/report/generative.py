"""Reports of generative-model runs: the papers' tables of them, and their position bias.

Paper-style tables (`paper_tables`): the report layouts of the catalog of paper tables
(`lexsem.report.paper.catalog.layouts`, each defined with the paper's table in
`lexsem.report.paper.tables`: its rows, its column names and order) filled with our runs
by `lexsem.report.paper.layout.render`, the accuracies shown as in the other report tables
(`60.00`, the coverage when items were not scored, the interval with `ci`): SugarCrepe++
Tables 8 (§3.3, multiple choice, Prompts 1-3), 14 (App. E.4, few-shot), 17 (App. G.1, yes/no
per caption, prompt paraphrases), 18 (App. G.1, option orderings), 19 (App. G.2, VGPTScore and
VQAScore ITT per subset) and BiVLC Table 2's generative rows (under its Random row).

No published number is put beside ours: the numbers the project reproduces to the decimal are
of other tables (`lexsem reproduce`). The one row from a paper is BiVLC Table 2's Random row:
chance, by definition.

Position bias (`lexsem.analysis.position_bias`; needs the per-item answers, so only in the HTML
report, `generative_sections`): for each multiple-choice run and prompt, per ordering, the share
of the answers naming an option that name each position, and the share of all answers naming no
single option (none, multiple, refusal, unparseable), as a table and a figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from lexsem.analysis.position_bias import NO_OPTION, PositionBias, position_bias
from lexsem.report.html import Section
from lexsem.report.labels import run_labels
from lexsem.report.paper.catalog import layouts
from lexsem.report.paper.generative_runs import is_generative
from lexsem.report.paper.layout import render
from lexsem.report.tables import Table, unique_runs
from lexsem.results.same_data import comparable_groups
from lexsem.results.schema import RunRecord

__all__ = ["bias_figure", "bias_table", "generative_sections", "paper_tables"]


def _records(runs: Iterable[Any]) -> list[RunRecord]:
    return unique_runs([getattr(r, "record", r) for r in runs])  # a `Run` or its record


def _tables(records: Sequence[RunRecord], ci: bool) -> list[Table]:
    labels = run_labels(records)
    return [t for layout in layouts() for t in render(layout, records, labels, ci)]


def paper_tables(runs: Iterable[Any], *, ci: bool = False) -> list[Table]:
    """The paper-style tables of the generative runs among `runs` (`Run`s or records); none
    when there is no generative run."""
    records = [r for r in _records(runs) if is_generative(r)]
    if not records:
        return []
    benches = list(dict.fromkeys(res.benchmark for r in records for res in r.results))
    parts, why = comparable_groups(records, benches)
    if len(parts) == 1:
        return _tables(records, ci)
    # runs that read different data of a benchmark are never rows of one table
    note = f"[data k of {len(parts)}]: runs that read different data are shown apart: " + "; ".join(
        why
    )
    out: list[Table] = []
    for k, part in enumerate(parts, 1):
        for t in _tables(part, ci):
            t.title += f" [data {k} of {len(parts)}]"
            t.notes.append(note)
            out.append(t)
    return out


# -- position bias -----------------------------------------------------------------------------


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.1f}"


def bias_table(bias: PositionBias) -> Table:
    n_opt = len(bias.rows[0].positions) if bias.rows else 0
    kinds = NO_OPTION
    t = Table(
        f"{bias.model} — {bias.benchmark}, {bias.task}: positions named (%)",
        ["ordering", "right option", "answers", *(f"({k})" for k in range(1, n_opt + 1)),
         "no single option", *kinds],
    )  # fmt: skip
    for row in bias.rows:
        t.rows.append(
            [row.ordering, "" if row.right is None else f"({row.right})", str(row.answers),
             *(_pct(row.positions[k]) for k in range(1, n_opt + 1)),
             _pct(100.0 - row.kinds["option"] if row.answers else 0.0),
             *(_pct(row.kinds[k]) for k in kinds)]
        )  # fmt: skip
    t.notes.append(
        "(1), (2), (3): the share of the answers naming an option that name that position (a "
        "model without preference: equal shares); no single option and its kinds: the share "
        "of all answers (lexsem.tasks.answers reads each answer)."
    )
    return t


def bias_figure(bias: PositionBias) -> tuple[str, bytes]:
    from lexsem.report.plots import position_bias_bars

    n_opt = len(bias.rows[0].positions) if bias.rows else 0
    kinds = NO_OPTION
    png = position_bias_bars(
        [r.ordering for r in bias.rows],
        [[r.positions[k] for k in range(1, n_opt + 1)] for r in bias.rows],
        {k: [r.kinds[k] for r in bias.rows] for k in kinds},
        f"{bias.model} — {bias.benchmark}, {bias.task}: position bias",
        right=[r.right for r in bias.rows],
    )
    caption = (
        f"Position bias of {bias.model} ({bias.task} on {bias.benchmark}): left, per ordering, "
        "the share of the answers naming an option that name each position (outlined: the "
        "right option; dashed: equal shares); right, the share of all answers naming no single "
        "option, by kind."
    )
    return caption, png


def _plots_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def generative_sections(runs: Sequence[Any], *, ci: bool = True) -> list[Section]:
    """The HTML report's "Generative models" section (paper tables, position bias); none when
    no run is generative."""
    tables = paper_tables(runs, ci=ci)
    names = run_labels([getattr(r, "record", r) for r in runs])
    biases = [b for run in unique_by_id(runs) for b in position_bias(run, names[run.record.run_id])]
    if not tables and not biases:
        return []
    sec = Section(
        "Generative models",
        "Runs of generative models laid out as the papers' tables (SugarCrepe++ Tables 8, 14, "
        "17, 18, 19; BiVLC Table 2), and the position bias of the multiple-choice runs.",
    )
    if tables:
        sec.subsections.append(Section("Paper tables", tables=tables))
    if biases:
        sec.subsections.append(_bias_section(biases))
    return [sec]


def _bias_section(biases: Sequence[PositionBias]) -> Section:
    plots = _plots_available()
    sec = Section(
        "Position bias",
        "Which option position each multiple-choice run names, per ordering of the options "
        "(SugarCrepe++ App. G.1 reorders them): a model that prefers a position scores high "
        "where the right option stands there and low elsewhere."
        + ("" if plots else "\n\nFigures need matplotlib: pip install 'lexsem[web]'."),
    )
    for bias in biases:
        sub = Section(f"{bias.model} — {bias.benchmark}, {bias.task}", tables=[bias_table(bias)])
        if plots:
            sub.figures.append(bias_figure(bias))
        sec.subsections.append(sub)
    return sec


def unique_by_id(runs: Sequence[Any]) -> list[Any]:
    """`Run`s with items (records alone have none), each run id once."""
    seen: set[str] = set()
    out = []
    for r in runs:
        rid = getattr(r, "record", r).run_id
        if hasattr(r, "items") and rid not in seen:
            seen.add(rid)
            out.append(r)
    return out

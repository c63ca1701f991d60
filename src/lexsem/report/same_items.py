"""The tables of humans and models on the same items (`lexsem report`, text and HTML): beside
each run that answers a sample of a benchmark by design (a human study's run,
`lexsem.results.samples`), every other run restricted to the items it answered
(`lexsem.analysis.same_items`): per benchmark and metric, one row per subset the study
answered (then all of them) and run, with n, the accuracy and its Wilson score interval, and
the paired exact McNemar test against the study's row."""

from __future__ import annotations

from collections.abc import Sequence

from lexsem.analysis.same_items import Interval, SameItems, on_reference_items
from lexsem.report.labels import run_labels
from lexsem.report.tables import Table, label
from lexsem.results.run import Run
from lexsem.results.samples import answers_a_sample

__all__ = ["same_items_tables"]


def _headers(who: str) -> list[str]:
    return ["model", "subset", "n", "accuracy (%)", "95% CI", f"{who} only", "model only", "p"]


def _ci(interval: Interval) -> str:
    return "" if interval is None else f"[{interval[0]:.1f}, {interval[1]:.1f}]"


def _acc(x: float) -> str:
    return f"{x:.2f}"


def same_items_tables(runs: Sequence[Run], names: dict[str, str] | None = None) -> list[Table]:
    """One table per sample run (a human study) and (benchmark, metric) it shares with other
    runs; `names`: run id -> label (default: `run_labels`). Runs that cannot be paired are
    named in a note of the sample run's first table (or a table of their own)."""
    names = names or run_labels([r.record for r in runs])
    out: list[Table] = []
    for ref in (r for r in runs if answers_a_sample(r.record)):
        rows, skipped = on_reference_items(ref, runs)
        by: dict[tuple[str, str], list[SameItems]] = {}
        for row in rows:
            by.setdefault((row.benchmark, row.metric), []).append(row)
        who = names[ref.record.run_id]
        first = len(out)
        for (bench, metric), group in by.items():
            title = f"{who} and the models on the same items — {bench} {label(metric)}"
            t = Table(title, _headers(who))
            for subset in dict.fromkeys(g.subset for g in group):
                these = [g for g in group if g.subset == subset]
                head = these[0]
                t.rows.append([who, label(subset), str(head.n), _acc(head.reference_accuracy),
                               _ci(head.reference_interval), "", "", ""])  # fmt: skip
                t.rows += [
                    [names[g.model_run], label(subset), str(g.n), _acc(g.model_accuracy),
                     _ci(g.model_interval), str(g.reference_only), str(g.model_only),
                     f"{g.p_value:.3g}"]
                    for g in these
                ]  # fmt: skip
            t.notes.append(
                f"Every run on the items {who} answered (n each); {who} only / model only: "
                f"items {who} gets right and the model wrong / the reverse; p: two-sided exact "
                "McNemar test (McNemar 1947); 95% CI: Wilson score interval of the proportion."
            )
            out.append(t)
        if skipped:
            note = [f"not on the items of {who}: " + "; ".join(skipped)]
            if len(out) > first:
                out[first].notes += note
            else:
                title = f"{who} and the models on the same items"
                out.append(Table(title, _headers(who), notes=note))
    return out

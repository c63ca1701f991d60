"""Runs restricted to a reference run's items: a human study answers a sample of a benchmark
(a few dozen of its thousands of items), so its accuracy sits beside a model's only on the
items the people answered. For each other run, each (benchmark, main metric) both hold
(`run_comparison.plan_comparison`) and each subset the reference answered, then all its items:
both accuracies on those items, n, each accuracy's Wilson score interval (`lexsem.stats.wilson`:
n is small) and the paired exact McNemar test (`run_comparison.mcnemar`, which pairs a sample
run on the items it answered and refuses a run lacking one of them).

Pure functions over `Run` objects; `lexsem.report.same_items` shows them in `lexsem report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lexsem.analysis.run_comparison import hits_by_item, mcnemar, plan_comparison
from lexsem.errors import LexsemError
from lexsem.results.run import Run
from lexsem.stats.bootstrap import MICRO
from lexsem.stats.wilson import wilson_interval

__all__ = ["SameItems", "on_reference_items"]

Interval = tuple[float, float] | None


@dataclass(frozen=True)
class SameItems:
    """The reference run and another run on the reference's items of one subset (or `_micro`:
    all of them) of one benchmark and metric."""

    benchmark: str
    metric: str
    subset: str  # a subset name or `_micro` (every item the reference answered)
    reference_run: str  # run ids
    model_run: str
    n: int  # paired items
    reference_hits: int
    model_hits: int
    reference_interval: Interval  # percent, Wilson score interval
    model_interval: Interval
    reference_only: int  # McNemar b: the reference right, the model wrong
    model_only: int  # McNemar c
    p_value: float  # two-sided exact McNemar

    @property
    def reference_accuracy(self) -> float:
        return 100.0 * self.reference_hits / self.n if self.n else float("nan")

    @property
    def model_accuracy(self) -> float:
        return 100.0 * self.model_hits / self.n if self.n else float("nan")


def _subsets(reference: Run, benchmark: str, metric: str) -> list[str]:
    """The subsets the reference answered on (benchmark, metric), in its order, then `_micro`
    (only when there are several: one subset's row is all of them)."""
    names = list(dict.fromkeys(hits_by_item(reference, benchmark, metric).subset.tolist()))
    return [*names, MICRO] if len(names) > 1 else names


def on_reference_items(
    reference: Run, runs: Sequence[Run], confidence: float = 0.95
) -> tuple[list[SameItems], list[str]]:
    """Each run of `runs` (the reference itself and runs sharing no benchmark with it left
    out) on the reference's items: one
    `SameItems` per benchmark, main metric and subset (`_subsets`), and one sentence per
    run and benchmark that cannot be paired (no common benchmark or metric, other data, an
    item the run lacks)."""
    rows: list[SameItems] = []
    skipped: list[str] = []
    mine = {b.name for b in reference.record.benchmarks}
    for run in runs:
        if run.record.run_id == reference.record.run_id:
            continue
        name = run.record.model.name
        if not {b.name for b in run.record.benchmarks} & set(mine):
            continue  # nothing in common: not a pair to speak of
        plan = plan_comparison(reference, run)
        skipped += [f"{name}: {why}" for why in plan.skipped]
        for bench, metric in plan.pairs:
            try:
                rows += [
                    _row(reference, run, bench, metric, subset, confidence)
                    for subset in _subsets(reference, bench, metric)
                ]
            except LexsemError as exc:
                skipped.append(f"{name}: {exc}")
    return rows, skipped


def _row(
    reference: Run, run: Run, bench: str, metric: str, subset: str, confidence: float
) -> SameItems:
    r = mcnemar(reference, run, bench, metric, None if subset == MICRO else subset)
    hits_ref, hits_model = r.hits_a, r.hits_b
    return SameItems(
        benchmark=bench,
        metric=r.metric,
        subset=subset,
        reference_run=reference.record.run_id,
        model_run=run.record.run_id,
        n=r.n,
        reference_hits=hits_ref,
        model_hits=hits_model,
        reference_interval=wilson_interval(hits_ref, r.n, confidence),
        model_interval=wilson_interval(hits_model, r.n, confidence),
        reference_only=r.b,
        model_only=r.c,
        p_value=r.p_value,
    )

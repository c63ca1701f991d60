"""`lexsem compare`: the exact McNemar test of two runs on their paired per-item hits; for one
model run in two dtypes (fp32 and bf16), the items whose hit differs, per subset."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lexsem.errors import LexsemError

if TYPE_CHECKING:  # pragma: no cover
    from lexsem.results.run import Run

__all__ = ["compare"]


def compare(
    run_a: Annotated[Path, typer.Argument(help="Run folder A.")],
    run_b: Annotated[Path, typer.Argument(help="Run folder B.")],
    benchmark: Annotated[
        list[str] | None, typer.Option("--benchmark", "-b", help="Default: all shared.")
    ] = None,
    metric: Annotated[str | None, typer.Option(help="Metric (default: each main metric).")] = None,
) -> None:
    """Exact McNemar test of two runs on the paired per-item hits of each shared benchmark."""
    from lexsem.analysis.run_comparison import (
        dtype_agreement,
        items_total,
        mcnemar,
        plan_comparison,
    )
    from lexsem.cli.run_paths import not_a_run
    from lexsem.results.run import Run
    from lexsem.results.samples import answers_a_sample

    for path in (run_a, run_b):
        why = not_a_run(path)
        if why is not None:
            raise LexsemError(why)
    a, b = Run.load(run_a), Run.load(run_b)
    if a.record.run_id == b.record.run_id:
        typer.echo(
            f"note: {run_a} and {run_b} hold the same run ({a.record.run_id}): every item agrees",
            err=True,
        )
    plan = plan_comparison(a, b, benchmark, metric)
    if not plan.pairs:  # say why there is nothing to show, never an empty table
        raise LexsemError(plan.why_empty())
    typer.echo("| benchmark | metric | items | A | B | A only | B only | p |")
    typer.echo("|---|---|---:|---:|---:|---:|---:|---:|")
    partial = False
    intervals = []
    for bench, m in plan.pairs:
        r = mcnemar(a, b, bench, m)
        intervals += [_interval(x, run, bench, m, hits, r.n) for x, run, hits in
                      (("A", a, r.hits_a), ("B", b, r.hits_b))
                      if answers_a_sample(run.record)]  # fmt: skip
        totals = [t for t in (items_total(a, bench, m), items_total(b, bench, m)) if t]
        items = f"{r.n}/{max(totals)}" if totals and r.n < max(totals) else str(r.n)
        partial |= items != str(r.n)
        typer.echo(
            f"| {bench} | {m} | {items} | {r.accuracy_a:.2f} | {r.accuracy_b:.2f} | {r.b} | "
            f"{r.c} | {r.p_value:.3g} |"
        )
    typer.echo(f"A = {a.record.model.name}, B = {b.record.model.name}; exact McNemar (two-sided).")
    if partial:
        typer.echo(
            "items: paired items scored / items of the benchmark (n/N): coverage below 100%, "
            "the test is over the scored items only (run.json: skipped, dropped, notices)"
        )
    for line in intervals:
        typer.echo(line)
    for why in plan.skipped:
        typer.echo(f"skipped {why}")
    for bench, m in plan.pairs:  # one model in two dtypes: what the lower precision changed
        agreement = dtype_agreement(a, b, bench, m)
        if agreement is not None:
            typer.echo(agreement.line())


def _interval(which: str, run: Run, bench: str, metric: str, hits: int, n: int) -> str:
    """A human study's accuracy on the paired items with its n and Wilson score interval."""
    from lexsem.stats.wilson import wilson_interval

    found = wilson_interval(hits, n)
    ci = "" if found is None else f", 95% Wilson interval [{found[0]:.1f}, {found[1]:.1f}]"
    accuracy = 100.0 * hits / n if n else float("nan")
    return f"{which} ({run.record.model.name}) on {bench} {metric}: {accuracy:.2f} of n = {n}{ci}"

"""`lexsem compare`: the exact McNemar test of two runs on their paired per-item hits; for one
model run in two dtypes (fp32 and bf16), the items whose hit differs, per subset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.errors import LexsemError

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
    for bench, m in plan.pairs:
        r = mcnemar(a, b, bench, m)
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
    for why in plan.skipped:
        typer.echo(f"skipped {why}")
    for bench, m in plan.pairs:  # one model in two dtypes: what the lower precision changed
        agreement = dtype_agreement(a, b, bench, m)
        if agreement is not None:
            typer.echo(agreement.line())

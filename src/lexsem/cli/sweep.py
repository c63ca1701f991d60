"""`lexsem sweep GRID -o OUT`: a grid of models × benchmarks × options run as jobs, one run
folder each (docs/scale.md); the work is `lexsem.sweep.runner.run_sweep`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import Quiet, config_group, from_options, with_groups
from lexsem.sweep.config import SweepConfig
from lexsem.sweep.record import summary_line

__all__ = ["JobOptions", "ShardOptions", "sweep"]

JobOptions = config_group(
    "JobOptions", SweepConfig, "executor", "address", "max_retries", "spread",
    doc="How the jobs run (SweepConfig's fields): `lexsem reproduce` shares them.",
)  # fmt: skip
ShardOptions = config_group(
    "ShardOptions", SweepConfig, "stores", "rank", "world_size", "extend",
    doc="The request stores, this process's shard and whether a sweep folder is extended "
    "(SweepConfig's fields).",
)  # fmt: skip


@with_groups
def sweep(
    grid: Annotated[Path, typer.Argument(help="The grid file (TOML, or YAML).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The sweep folder.")],
    jobs: JobOptions = JobOptions.DEFAULTS,
    shards: ShardOptions = ShardOptions.DEFAULTS,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the jobs (done or to run); run nothing.")
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Run a grid of models × benchmarks × options: one run folder per job in OUT/runs,
    jobs already done skipped, failures reported in OUT/sweep.json (exit status 1) without
    stopping the others. `lexsem report OUT` tabulates every run."""
    from lexsem.cli.quiet import quiet_libraries
    from lexsem.sweep.runner import run_sweep

    quiet_libraries(quiet)
    config = from_options(SweepConfig, "sweep", {}, **jobs.given(), **shards.given())
    res = run_sweep(
        grid, out, dry_run=dry_run, **config.model_dump(),
        echo=(lambda text: None) if quiet else (lambda text: typer.echo(text, err=True)),
    )  # fmt: skip
    if dry_run:
        for job in res.jobs:
            typer.echo(f"{'done' if job.status == 'skipped' else 'to run':7s} {job.id}")
        typer.echo(f"{res.count('pending')} of {len(res.jobs)} jobs to run")
        return
    counts = summary_line(res)
    mine = f" (this shard: {len(res.own)} jobs)" if res.shard is not None else ""
    typer.echo(f"{counts}{mine}; {out / 'sweep.json'}")
    for job in res.failed:
        typer.echo(f"failed: {job.id}: {job.error}", err=True)
    if res.merge.get("error"):
        typer.echo(f"error: {res.merge['error']}", err=True)
    if not res.complete:
        raise typer.Exit(1)

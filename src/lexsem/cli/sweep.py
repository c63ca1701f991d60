"""`lexsem sweep GRID -o OUT`: a grid of models × benchmarks × options run as jobs, one run
folder each (docs/scale.md); the work is `lexsem.sweep.runner.run_sweep`."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.sweep.grid import MAX_SPREAD
from lexsem.sweep.record import summary_line
from lexsem.sweep.runner import run_sweep

__all__ = ["Address", "Executor", "MaxRetries", "Spread", "sweep"]

_DEFAULTS = {k: p.default for k, p in inspect.signature(run_sweep).parameters.items()}


def _choice(allowed: tuple[str, ...]) -> Any:
    def check(value: str | None) -> str | None:
        if value is not None and value not in allowed:
            raise typer.BadParameter(f"{value!r}: choose {', '.join(allowed)}")
        return value

    return check


# the options `lexsem reproduce` shares (it runs a table as a sweep)
Executor = Annotated[
    str,
    typer.Option(
        help="local (in order, here), shard (this process's slice: torchrun, SLURM array) "
        "or ray (one task per job).",
    ),
]
Address = Annotated[
    str | None,
    typer.Option(help="Ray: the cluster to use (ray://HOST:10001, auto); default: a local one."),
]
MaxRetries = Annotated[
    int,
    typer.Option(min=0, max=100, help="Ray: times a job is retried when its worker is lost."),
]
Spread = Annotated[
    int | None,
    typer.Option(
        min=1,
        max=MAX_SPREAD,
        help="Spread each job's text and image encoding over this many Ray actors "
        "(default: each job's resources.spread; results as one process).",
    ),
]


def sweep(
    grid: Annotated[Path, typer.Argument(help="The grid file (TOML, or YAML).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The sweep folder.")],
    executor: Executor = _DEFAULTS["executor"],
    address: Address = _DEFAULTS["address"],
    stores: Annotated[
        str | None,
        typer.Option(
            help="shared (every job writes the main request store) or per-job (a store per job "
            "on local disk, merged into the main one); default: per-job on Ray, else shared.",
            callback=_choice(("shared", "per-job")),
        ),
    ] = _DEFAULTS["stores"],
    rank: Annotated[
        int | None,
        typer.Option(min=0, help="shard: this process's rank (default: from the environment)."),
    ] = _DEFAULTS["rank"],
    world_size: Annotated[
        int | None,
        typer.Option(min=1, help="shard: the number of shards (default: from the environment)."),
    ] = _DEFAULTS["world_size"],
    max_retries: MaxRetries = _DEFAULTS["max_retries"],
    spread: Spread = _DEFAULTS["spread"],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the jobs (done or to run); run nothing.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    extend: Annotated[
        bool, typer.Option("--extend", help="Add this grid's jobs to OUT's sweep of another grid.")
    ] = False,
) -> None:
    """Run a grid of models × benchmarks × options: one run folder per job in OUT/runs,
    jobs already done skipped, failures reported in OUT/sweep.json (exit status 1) without
    stopping the others. `lexsem report OUT` tabulates every run."""
    res = run_sweep(
        grid, out, executor, stores=stores, address=address, rank=rank,  # type: ignore[arg-type]
        world_size=world_size, max_retries=max_retries, spread=spread, dry_run=dry_run,
        extend=extend,
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

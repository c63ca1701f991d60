"""`lexsem build RECIPE -o DIR`: run a construction recipe (docs/building.md); the work is
`lexsem.construct.runner.build`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import CacheDir

__all__ = ["build"]


def build(
    recipe: Annotated[Path, typer.Argument(help="The recipe file (TOML).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The build folder.")],
    replay_only: Annotated[
        bool, typer.Option("--replay-only", help="Send nothing: every answer from the store.")
    ] = False,
    max_requests: Annotated[
        int | None,
        typer.Option("--max-requests", min=0, help="Refuse a build that would send more."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run every stage again; build in a non-build folder.")
    ] = False,
    cache_dir: CacheDir = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Build a benchmark or training data from a recipe: its stages in order, each output kept
    in DIR/stages, resumed where it stopped; acceptance statistics per stage at the end."""
    from lexsem.construct.runner import build as run_build

    res = run_build(
        recipe, out, replay_only=replay_only, max_requests=max_requests, force=force,
        cache_dir=cache_dir, progress=not quiet, echo=lambda text: typer.echo(text, err=True),
    )  # fmt: skip
    typer.echo(f"done: {res.output} ({res.sent} requests sent)")

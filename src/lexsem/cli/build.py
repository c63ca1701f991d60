"""`lexsem build RECIPE -o DIR`: run a construction recipe (docs/building.md); the work is
`lexsem.construct.runner.build`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import EVAL, CacheDir, config_option, defaults, from_options
from lexsem.construct.config import BuildConfig

__all__ = ["build"]

BUILD = defaults(BuildConfig)

ReplayOnly = config_option(BuildConfig, "replay_only", "--replay-only")
MaxRequests = config_option(BuildConfig, "max_requests", "--max-requests")
Force = config_option(BuildConfig, "force", "--force")


def build(
    recipe: Annotated[Path, typer.Argument(help="The recipe file (TOML, or YAML).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The build folder.")],
    replay_only: ReplayOnly = BUILD.replay_only,
    max_requests: MaxRequests = BUILD.max_requests,
    force: Force = BUILD.force,
    cache_dir: CacheDir = EVAL.cache_dir,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Build a benchmark or training data from a recipe: its stages in order, each output kept
    in DIR/stages, resumed where it stopped; acceptance statistics per stage at the end."""
    from lexsem.construct.runner import build as run_build

    config = from_options(BuildConfig, "build", {}, replay_only=replay_only,
                          max_requests=max_requests, force=force)  # fmt: skip
    res = run_build(
        recipe, out, **config.model_dump(), cache_dir=cache_dir, progress=not quiet,
        echo=lambda text: typer.echo(text, err=True),
    )  # fmt: skip
    typer.echo(f"done: {res.output} ({res.sent} requests sent)")

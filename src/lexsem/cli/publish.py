"""`lexsem publish`: run folders (a sweep's folder stands for its runs) as a static leaderboard
site, and optionally a Hugging Face dataset folder (docs/publish.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["publish_cmd"]


def publish_cmd(
    runs: Annotated[
        list[Path], typer.Argument(help="Run folders (a sweep's folder stands for its runs).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The site's folder (replaced whole).")],
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Two runs of one model on one benchmark and task: keep the later one given.",
        ),
    ] = False,
    hf_dataset: Annotated[
        Path | None,
        typer.Option(
            "--hf-dataset",
            help="Also write the results as a dataset folder (Parquet + README.md card) that "
            "datasets.load_dataset reads.",
        ),
    ] = None,
    explore_url: Annotated[
        str | None,
        typer.Option(
            help="A running `lexsem explore` (http://HOST:PORT): the model pages' hardest items "
            "link to it."
        ),
    ] = None,
) -> None:
    """Publish runs as a leaderboard: a static site (index.html, a page per model, JSON; opens
    from file://) with 95% intervals and rank groups (McNemar, Holm). Runs that do not compare
    (other data, other scoring settings, one model twice) are refused, one line each."""
    from lexsem.cli.options import check_explore_url
    from lexsem.cli.run_paths import run_folders
    from lexsem.publish import publish

    check_explore_url(explore_url)
    done = publish(
        run_folders(runs), out, replace=replace, hf_dataset=hf_dataset, explore_url=explore_url
    )
    for line in done.said:
        typer.echo(line, err=True)
    cached = done.runs - done.read
    typer.echo(
        f"wrote {done.site}: {done.models} models, {done.tables} tables from {done.runs} runs "
        f"({done.read} read, {cached} unchanged from the site's cache) in "
        f"{sum(done.seconds.values()):.1f}s"
        + (f"; dataset {done.dataset}" if done.dataset is not None else "")
    )

"""`lexsem explore`: a local web page over the items of many runs (docs/explore.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import FOLDER_OPTIONS, config_group, with_groups
from lexsem.config import EvalConfig
from lexsem.errors import LexsemError
from lexsem.explore.config import ExploreConfig

__all__ = ["explore"]

ExploreFolders = config_group(
    "ExploreFolders", EvalConfig, "data_dir", "coco_val2017", "coco_train2017", "image_root",
    doc="Where the runs' benchmark files and images are (EvalConfig's fields).",
    **FOLDER_OPTIONS,
)  # fmt: skip
ExploreServer = config_group(
    "ExploreServer", ExploreConfig, *ExploreConfig.model_fields,
    doc="Where the page is served and its slices' resamples (ExploreConfig's fields).",
)  # fmt: skip


@with_groups
def explore(
    runs: Annotated[
        list[Path], typer.Argument(help="Run folders (a sweep's folder stands for its runs).")
    ],
    folders: ExploreFolders = ExploreFolders.DEFAULTS,
    server: ExploreServer = ExploreServer.DEFAULTS,
) -> None:
    """Look through the items of runs: slices, each item's captions, images and verdicts;
    export a figure, a benchmark file or a study. Serves http://HOST:PORT until Ctrl-C."""
    from lexsem.cli.options import from_options
    from lexsem.cli.run_paths import run_folders
    from lexsem.explore.app import create_app
    from lexsem.explore.runs_table import open_runs
    from lexsem.web_server import host_names, is_wildcard, listening, open_urls, serve

    cfg = from_options(ExploreConfig, "explore", {}, **server.given())
    for path in runs:
        _no_folder_of_runs(path)
    folders_given = run_folders(runs)
    with listening(cfg.host, cfg.port) as sock:  # before the runs are read
        table = open_runs(folders_given)
        images = {k: v for k, v in folders.given().items() if k != "data_dir"}
        app = create_app(table, data_dir=folders.data_dir, n_boot=cfg.n_boot,
                         image_folders=images, allowed_hosts=host_names(cfg.host),
                         any_address=is_wildcard(cfg.host))  # fmt: skip
        here, *elsewhere = open_urls(cfg.host, cfg.port)
        others = "".join(f" (from other machines: {u})" for u in elsewhere)
        typer.echo(f"lexsem explore: {len(table.runs)} runs, {len(table)} rows; "
                   f"open {here}{others} (Ctrl-C stops)")  # fmt: skip
        serve(app, sock)


def _no_folder_of_runs(path: Path) -> None:
    """A folder that is no run and no sweep but holds runs (`runs/`) is refused with the glob
    that gives its runs (`runs/*`): which of its folders to show is the shell's choice."""
    from lexsem.cli.run_paths import not_a_run

    if not path.is_dir() or not_a_run(path) is None:
        return
    inside = [c for c in sorted(path.iterdir()) if c.is_dir() and not_a_run(c) is None]
    if inside:
        raise LexsemError(
            f"{path}: not a run folder, but it holds {len(inside)} run folder"
            f"{'s' * (len(inside) != 1)} ({inside[0].name}, ...): give them, e.g. "
            f"lexsem explore {path}/*"
        )

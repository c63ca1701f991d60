"""`lexsem explore`: a local web page over the items of many runs (docs/explore.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import (
    EVAL,
    CocoTrain,
    CocoVal,
    DataDir,
    ImageRoot,
    config_option,
    defaults,
)
from lexsem.errors import LexsemError
from lexsem.explore.config import ExploreConfig

__all__ = ["explore"]

EXPLORE = defaults(ExploreConfig)
Host = config_option(ExploreConfig, "host", "--host")
Port = config_option(ExploreConfig, "port", "--port")
NBootSlice = config_option(ExploreConfig, "n_boot", "--n-boot")


def explore(
    runs: Annotated[
        list[Path], typer.Argument(help="Run folders (a sweep's folder stands for its runs).")
    ],
    data_dir: DataDir = EVAL.data_dir,
    coco_val2017: CocoVal = EVAL.coco_val2017,
    coco_train2017: CocoTrain = EVAL.coco_train2017,
    image_root: ImageRoot = EVAL.image_root,
    host: Host = EXPLORE.host,
    port: Port = EXPLORE.port,
    n_boot: NBootSlice = EXPLORE.n_boot,
) -> None:
    """Look through the items of runs: slices, each item's captions, images and verdicts;
    export a figure, a benchmark file or a study. Serves http://HOST:PORT until Ctrl-C."""
    from lexsem.cli.options import from_options
    from lexsem.cli.run_paths import run_folders
    from lexsem.explore.app import create_app
    from lexsem.explore.runs_table import open_runs
    from lexsem.web_server import listening, serve

    cfg = from_options(ExploreConfig, "explore", {"host": "--host", "port": "--port",
                       "n_boot": "--n-boot"}, host=host, port=port, n_boot=n_boot)  # fmt: skip
    for path in runs:
        _no_folder_of_runs(path)
    folders_given = run_folders(runs)
    with listening(cfg.host, cfg.port) as sock:  # before the runs are read
        table = open_runs(folders_given)
        hosts = tuple(dict.fromkeys(("127.0.0.1", "localhost", cfg.host)))
        folders = {"coco_val2017": coco_val2017, "coco_train2017": coco_train2017,
                   "image_root": image_root}  # fmt: skip
        app = create_app(table, data_dir=data_dir, n_boot=cfg.n_boot, image_folders=folders,
                         allowed_hosts=hosts)  # fmt: skip
        typer.echo(f"lexsem explore: {len(table.runs)} runs, {len(table)} rows; "
                   f"open http://{cfg.host}:{cfg.port}/ (Ctrl-C stops)")  # fmt: skip
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

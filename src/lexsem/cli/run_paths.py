"""The run folders `report` and `compare` are given, as a shell hands them over (`runs/*`):
which are runs, which are not, and the checks on the files they write before any work.

A folder is a run when it holds run.json (or is being replaced: `located` finds the previous
run); a training run's folder stands for its evaluations, and a sweep's folder (`lexsem
sweep`: it holds sweep.json) for the runs of its finished jobs. Anything else a glob matches (the
`runs/data` folder the docs create, an HTML page, a notes file, an empty folder) is skipped
by `report` with one warning line each, and named as not a run by `compare`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from lexsem.errors import LexsemError
from lexsem.results.folder_swap import ITEMS_PARQUET, RUN_JSON
from lexsem.sweep.record import SWEEP_JSON

__all__ = ["check_output_file", "not_a_run", "run_folders", "sweep_missing"]


def not_a_run(path: Path) -> str | None:
    """Why `path` is no run (folder or run.json) to read; None when it is one, or when it does
    not exist (the reader names a missing path)."""
    if not path.exists():
        return None
    if path.is_dir():
        if any((path / name).is_file() for name in (RUN_JSON, "train.json", SWEEP_JSON)):
            return None
        return f"{path}: not a run folder (no {RUN_JSON})"
    if path.name == RUN_JSON:
        return None
    return f"{path}: not a run folder (a file; give a run folder or its {RUN_JSON})"


def run_folders(paths: Sequence[Path], *, untabulated: bool = False) -> list[Path]:
    """`paths` without those that are not runs (a path that does not exist is kept: reading
    it names it), each skipped with one warning line on stderr; a training run's folder is
    replaced by its evaluations (before training, each epoch), in order. With `untabulated`
    (the HTML page, which shows a training run's curves anyway) a training run with no
    evaluation stands for none, and an empty result is returned; else None left is a
    `LexsemError`."""
    out: list[Path] = []
    trained = False
    for p in map(Path, paths):
        why = not_a_run(p)
        if why is not None:
            typer.echo(f"warning: {why}, skipped", err=True)
            continue
        if (p / "train.json").is_file():
            trained = True
            out += _evaluations(p, untabulated)
        elif (p / SWEEP_JSON).is_file() and not (p / RUN_JSON).is_file():
            out += _sweep_runs(p)
        else:
            out.append(p)
    if not out and not (untabulated and trained):
        raise LexsemError(
            f"no run among the {len(paths)} path{'s' * (len(paths) != 1)} given: give run "
            f"folders (each holds {RUN_JSON} and {ITEMS_PARQUET})"
        )
    return out


def _sweep_runs(folder: Path) -> list[Path]:
    """The run folders of a sweep's finished jobs, in the grid's order; a note line counts the
    jobs without a run, and one line per failed job gives its reason."""
    from lexsem.report.sweep_jobs import missing_lines

    runs, missing, total = sweep_missing(folder)
    for line in missing_lines(str(folder), missing, total):
        typer.echo(line, err=True)
    return runs


def sweep_missing(folder: Path) -> tuple[list[Path], list[Any], int]:
    """A sweep folder's run folders (finished jobs, in the grid's order), its jobs without a
    run (`MissingJob`: failed with the reason, or not run yet), and its number of jobs."""
    from lexsem.report.sweep_jobs import MissingJob
    from lexsem.sweep.record import read_summary, run_dir

    summary = read_summary(folder)
    assert summary is not None
    runs, missing = [], []
    for j in summary.jobs:
        run = run_dir(folder, j.id)
        if j.status in ("done", "skipped") and (run / RUN_JSON).is_file():
            runs.append(run)
        else:
            missing.append(MissingJob(j.id, j.status, j.error))
    return runs, missing, len(summary.jobs)


def _evaluations(run: Path, untabulated: bool) -> list[Path]:
    from lexsem.errors import DataError
    from lexsem.train.record import evaluation_folders

    try:
        return evaluation_folders(run)
    except DataError as exc:
        if untabulated and "no evaluation yet" in str(exc):
            return []
        raise


def check_output_file(path: Path, option: str, example: str) -> None:
    """Refuse, before any work, an output file that cannot be written: a folder, a path under
    a file or a missing folder, a folder without write permission. `example`: a file name to
    suggest for a folder."""
    if path.is_dir():
        raise LexsemError(f"{option} {path}: is a folder; give a file name (e.g. {path / example})")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise LexsemError(f"{option} {path}: cannot write there: {parent} {what}")
    denied = f"{option} {path}: cannot write there: permission denied"
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise LexsemError(denied)
    probe = parent / f".{path.name}.lexsem-probe-{os.getpid()}"
    try:  # a read-only file system, or permissions os.access does not see
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise LexsemError(f"{option} {path}: cannot write there: {exc.strerror or exc}") from None
    probe.unlink(missing_ok=True)

"""Outputs that are not inputs: the one check every command that writes makes before any work.

A command never writes over what it reads, nor into a folder lexsem keeps whole:

- an output is never one of the command's inputs (a file it reads, or an existing file inside
  a folder it reads: `score-answers A.jsonl --json A.jsonl`, `validate scpp:F --json F`), and
  an output folder never holds one of them (a run folder is replaced whole, so an input inside
  it would be lost). A new output inside an input folder is no input and is written there
  (`eval --data-dir DATA --out DATA/runs`, `report runs/ft --html runs/ft/report.html`);
- an output file never lies inside an evaluation run folder (a folder holding `run.json`): the
  folder is its run, and is replaced whole by the next write with `--force`; a file written
  there is lost then, or, named like one of the run's files, replaces it. A training run folder
  (holding `train.json`) is kept, not replaced: a new file may be written into it (`report
  runs/ft --html runs/ft/report.html`), never over one of its files;
- an output folder of one kind is never a run folder of another kind, nor inside one (`train
  -o` an evaluation run, `eval --out` a training run, `train-data` into either);
- an output file is never an existing folder, and its folder must be writable; an output
  folder must be writable, or be made in a writable folder;
- an existing output file is replaced without `--force` only when lexsem wrote it (or it is
  empty): a paper draft, a user's notes, a CSV, anything else is refused before any work.
  lexsem's outputs are told by how they open (`OWN_OPENINGS`, read from the first
  `PREFIX_BYTES` bytes): the HTML report's `<meta name="generator" content="lexsem VERSION">`;
  a JSON output (`score-answers --json`, `validate --json`) or JSON Lines answers and scores
  (`ask -o`, `convert-answers`) whose first object opens with `"generator": "lexsem"`
  (`GENERATOR`, the first key of each record lexsem writes); a Markdown table opening with the
  line `<!-- lexsem -->` and a LaTeX table with `% lexsem` (`TABLE_MARKS`, written by `report
  -o`). A CSV table has no place for a mark: an existing one is replaced only with `--force`.

Paths are compared after `..` and symbolic links are resolved (`os.path.realpath`), so
`-o ./x/../RUN/run.json` or a link to an input is caught too. Errors are `LexsemError`s naming
the option, the path and what it collides with.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from lexsem.errors import LexsemError

__all__ = [
    "GENERATOR",
    "OWN_OPENINGS",
    "PREFIX_BYTES",
    "RUN_MARKERS",
    "TABLE_MARKS",
    "check_output_dir",
    "check_output_file",
    "check_outputs",
    "named_paths",
    "run_folder_of",
    "written_by_lexsem",
]

# the file that makes a folder a run folder, per kind
RUN_MARKERS = {"run.json": "an evaluation run", "train.json": "a training run"}
FolderKind = Literal["run.json", "train.json"] | None  # None: a folder of data, not a run

# the first key of every JSON object and JSON Lines record lexsem writes as an output file
GENERATOR = {"generator": "lexsem"}
# the first line of a table `report -o` writes, per format (CSV has none: no comment syntax)
TABLE_MARKS = {"md": "<!-- lexsem -->\n", "latex": "% lexsem\n"}
PREFIX_BYTES = 4096  # how much of an existing file is read to tell whether lexsem wrote it
OWN_OPENINGS = (
    re.compile(r'\A\s*\{\s*"generator"\s*:\s*"lexsem"'),  # JSON, or a JSON Lines record
    re.compile(r'\A<!DOCTYPE html>.*?<meta name="generator" content="lexsem[ "]', re.DOTALL),
    *(re.compile(r"\A" + re.escape(mark)) for mark in TABLE_MARKS.values()),
)


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def run_folder_of(path: str | Path) -> Path | None:
    """The run folder (evaluation or training) `path` lies inside, `..` and links resolved."""
    for parent in _real(path).parents:
        if any((parent / marker).is_file() for marker in RUN_MARKERS):
            return parent
    return None


def _kind(folder: Path) -> str:
    return next(what for marker, what in RUN_MARKERS.items() if (folder / marker).is_file())


def named_paths(*values: str | Path | None) -> list[Path]:
    """The existing files and folders that command-line values name: a path, or the PATH of a
    `FORMAT:PATH` selector or `BACKEND:PATH?options` model spec."""
    found: list[Path] = []
    for value in values:
        if value is None:
            continue
        text = str(value)
        for candidate in (text, text.partition(":")[2].partition("?")[0]):
            if candidate and Path(candidate).expanduser().exists():
                found.append(Path(candidate).expanduser())
                break
    return found


def _collision(real: Path, inputs: Iterable[str | Path], folder: bool) -> tuple[Path, str] | None:
    """The input that the output `real` (a folder when `folder`) is, holds, or (an existing
    file) lies inside, and how; None when it is none of these (module doc)."""
    for given in inputs:
        inp = _real(given)
        if real == inp:
            return Path(given), "is"
        if not folder and real.exists() and inp.is_dir() and inp in real.parents:
            return Path(given), "lies inside"
        if folder and real in inp.parents:
            return Path(given), "holds"
    return None


def written_by_lexsem(path: str | Path) -> bool:
    """Whether the existing file `path` is one of lexsem's outputs, or empty (nothing to
    lose), told from its first `PREFIX_BYTES` bytes (see the module doc). A file that cannot be
    read, or is no regular file (a pipe, a device), is not."""
    real = _real(path)
    try:
        if not stat.S_ISREG(real.stat().st_mode):
            return False
        with open(real, "rb") as fh:
            head = fh.read(PREFIX_BYTES)
    except OSError:
        return False
    text = head.decode("utf-8", errors="replace")
    return not head or any(opening.match(text) for opening in OWN_OPENINGS)


def check_output_file(
    out: str | Path,
    *,
    inputs: Iterable[str | Path] = (),
    option: str = "--out",
    force: bool = False,
) -> None:
    """Refuse, before any work, a file output `out` that is one of `inputs` (or an existing
    file inside one), lies inside a run folder, is a folder, lies in a read-only folder, or
    (unless `force`) exists and was not written by lexsem (see the module doc)."""
    real = _real(out)
    hit = _collision(real, inputs, folder=False)
    if hit is not None:
        given, how = hit
        what = "" if how == "is" else " (a folder this command reads)"
        raise LexsemError(
            f"{option} {out} {how} {given}{what}, an input of this command: writing it would "
            "replace what is being read; choose another path"
        )
    outer = run_folder_of(real)
    if outer is not None and ((outer / "run.json").is_file() or real.exists()):
        raise LexsemError(
            f"{option} {out} lies inside the run folder {outer} ({_kind(outer)}): its files are "
            "the run, and the folder is replaced whole by the next run written there; choose a "
            "path outside it"
        )
    if real.is_dir():
        raise LexsemError(f"{option} {out} is a folder: give a file name")
    parent = next((p for p in real.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise LexsemError(f"{option} {out}: {parent} is a file, not a folder")
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise LexsemError(f"{option} {out}: the folder {parent} is read-only")
    if real.exists() and not os.access(real, os.W_OK):
        raise LexsemError(f"{option} {out} is read-only")
    if not force and real.exists() and not written_by_lexsem(real):
        raise LexsemError(
            f"{option} {out} exists and was not written by lexsem; pass --force to replace it"
        )


def check_output_dir(
    out: str | Path,
    *,
    kind: FolderKind,
    inputs: Iterable[str | Path] = (),
    option: str = "--out",
) -> None:
    """Refuse, before any work, a folder output `out` (of `kind`: the file that marks a run
    folder of that kind; None for a folder of data) that is or holds one of `inputs`, is (or
    lies inside) a run folder of another kind, or is (or would be made in) a read-only
    folder."""
    real = _real(out)
    hit = _collision(real, inputs, folder=True)
    if hit is not None:
        given, how = hit
        raise LexsemError(
            f"{option} {out} {how} {given}, an input of this command: the folder is replaced "
            "whole when the run is written, so the input would be lost; choose another folder"
        )
    wanted = "a folder of data" if kind is None else RUN_MARKERS[kind]
    for folder in (real, *real.parents):
        for marker, what in RUN_MARKERS.items():
            if marker != kind and (folder / marker).is_file():
                where = "holds" if folder == real else f"lies inside {folder}, which holds"
                raise LexsemError(
                    f"{option} {out} {where} {what}, not {wanted}: lexsem does not write one "
                    "kind of run into (or inside) the folder of another; choose another folder"
                )
    existing = next((p for p in (real, *real.parents) if p.exists()), None)
    if existing is not None and existing.is_dir() and not os.access(existing, os.W_OK | os.X_OK):
        if existing == real:
            raise LexsemError(f"{option} {out} is read-only: lexsem cannot write into it")
        raise LexsemError(
            f"{option} {out}: the folder {existing} is read-only: lexsem cannot make {out} in it"
        )


def check_outputs(
    files: dict[str, str | Path | None], *, inputs: Iterable[str | Path], force: bool = False
) -> None:
    """`check_output_file` for each option → path given (None: not given); two options naming
    one file are refused too."""
    inputs = list(inputs)
    seen: dict[Path, str] = {}
    for option, path in files.items():
        if path is None or str(path) == "-":
            continue
        check_output_file(path, inputs=inputs, option=option, force=force)
        real = _real(path)
        if real in seen:
            raise LexsemError(f"{option} and {seen[real]} name the same file {path}")
        seen[real] = option

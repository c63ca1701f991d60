"""A benchmark frozen by `lexsem build` (stage `freeze`, docs/building.md "Freeze"): the layout
of its folder, and the selector `build:DIR` that runs it.

A frozen benchmark is a folder of files in one of lexsem's own formats (`FORMAT:PATH`,
`lexsem.benchmarks.user`) beside its data card::

    DIR/benchmark/<subset>.json     the items, one file per subset
    DIR/benchmark/README.md         the card, for people: a Hugging Face dataset card
    DIR/benchmark/data_card.json    the card, for programs: format, files and their sha256, ...

`build:DIR` (DIR a build folder, or its `benchmark` folder) reads the card, checks that every
file it lists has the sha256 it records (a file changed after freezing is an error naming it)
and stands for `FORMAT:DIR/benchmark`. This module reads the folder by its files alone: the
build layer writes it (`lexsem.construct.freeze`) with the names defined here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lexsem.digests import file_sha256
from lexsem.errors import DataError

__all__ = [
    "BENCHMARK_DIR",
    "CARD_JSON",
    "CARD_KIND",
    "CARD_MD",
    "PREFIX",
    "is_build_selector",
    "resolve",
]

PREFIX = "build"
BENCHMARK_DIR = "benchmark"
CARD_JSON = "data_card.json"
CARD_MD = "README.md"
CARD_KIND = "data_card"


def is_build_selector(selector: str) -> bool:
    """True for `build:DIR`."""
    head, sep, rest = selector.strip().partition(":")
    return bool(sep) and head == PREFIX and bool(rest)


def _folder(raw: str, selector: str) -> Path:
    path = Path(raw).expanduser()
    for folder in (path / BENCHMARK_DIR, path):
        if (folder / CARD_JSON).is_file():
            return folder
    if not path.exists():
        raise DataError(f"{selector}: {path} does not exist")
    raise DataError(
        f"{selector}: no frozen benchmark in {path} (no {BENCHMARK_DIR}/{CARD_JSON}); end the "
        "recipe with a `freeze` stage and run `lexsem build` again"
    )


def read_card(folder: Path) -> dict[str, Any]:
    """The data card of a frozen benchmark folder (its `format` and `files` checked)."""
    from lexsem.jsonl import read_json

    path = folder / CARD_JSON
    card = read_json(path)
    ok = (
        isinstance(card, dict)
        and card.get("kind") == CARD_KIND
        and isinstance(card.get("format"), str)
        and isinstance(card.get("files"), list)
        and all(
            isinstance(f, dict) and isinstance(f.get("file"), str) and "/" not in f["file"]
            and isinstance(f.get("sha256"), str)
            for f in card["files"]
        )
    )  # fmt: skip
    if not ok:
        raise DataError(
            f"not a data card of lexsem's `freeze` (needs kind {CARD_KIND!r}, format, files)",
            file=path,
        )
    return card


def resolve(selector: str) -> tuple[str, Path]:
    """`build:DIR` -> (`FORMAT:FOLDER`, FOLDER), every file of the card checked by sha256."""
    folder = _folder(selector.strip().partition(":")[2], selector)
    card = read_card(folder)
    for entry in card["files"]:
        path = folder / entry["file"]
        if not path.is_file():
            raise DataError(f"{selector}: {path} is listed in {CARD_JSON} but missing")
        found = file_sha256(path)
        if found != entry["sha256"]:
            raise DataError(
                f"{selector}: {path} has sha256 {found[:12]}..., the data card records "
                f"{entry['sha256'][:12]}...: the file changed after it was frozen"
            )
    return f"{card['format']}:{folder}", folder

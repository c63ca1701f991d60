"""A slice or a selection of items as a benchmark file `lexsem eval` and `lexsem build` read
(`FORMAT:PATH`, `lexsem.benchmarks.user`), and as a study `lexsem annotate create` makes: a
zip of that file and the command that creates the study from it.

Triplets are written in the SugarCrepe++ format (`scpp`), pairs in SugarCrepe's
(`sugarcrepe`); image references are kept as the benchmark names them, so the file is
evaluated with the same image folders (`--coco-val2017`). Item ids are kept when the items
come from one subset, else written `SUBSET/ID`."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any

from lexsem.errors import LexsemError
from lexsem.tasks.catalog import find_task

__all__ = ["MAX_EXPORT_ITEMS", "benchmark_file", "study_kinds", "study_zip"]

MAX_EXPORT_ITEMS = 20_000


def _ids(items: Sequence[Any]) -> list[str]:
    one = len({it.subset for it in items}) == 1
    return [str(it.id) if one else f"{it.subset}/{it.id}" for it in items]


def benchmark_file(items: Sequence[Any], name: str = "items") -> tuple[str, str, bytes]:
    """(format, file name, bytes) of `items` (one kind: triplets or pairs)."""
    if not items:
        raise LexsemError("no items to export")
    if len(items) > MAX_EXPORT_ITEMS:
        raise LexsemError(f"{len(items)} items: export at most {MAX_EXPORT_ITEMS} at once")
    ids = _ids(items)
    if all(hasattr(it, "p1") for it in items):
        recs: Any = [
            {"id": i, "filename": it.image, "caption": it.p1, "caption2": it.p2,
             "negative_caption": it.n} | ({} if it.image else {"filename": None})
            for i, it in zip(ids, items, strict=True)
        ]  # fmt: skip
        recs = [{k: v for k, v in r.items() if v is not None} for r in recs]
        fmt = "scpp"
    elif all(hasattr(it, "pos") for it in items):
        recs = {
            i: {"caption": it.pos, "negative_caption": it.neg}
            | ({"filename": it.image} if it.image else {})
            for i, it in zip(ids, items, strict=True)
        }
        fmt = "sugarcrepe"
    else:
        raise LexsemError(
            "a benchmark file is written for triplets (SugarCrepe++ format) or pairs "
            "(SugarCrepe format) of one kind: this selection has other items"
        )
    body = json.dumps(recs, indent=1, ensure_ascii=False) + "\n"
    return fmt, f"{name}.json", body.encode("utf-8")


def study_kinds(items: Sequence[Any], tasks: Iterable[str]) -> tuple[str, ...]:
    """The study kinds (`lexsem annotate create --kind`) of `items` as the runs scored them on
    `tasks`: `pair` for pairs; for triplets `tot` where a task read the captions alone (TOT,
    T2T, blind scores) and `itt` where one showed the image (ITT, I2T, multiple choice)."""
    if items and all(hasattr(it, "pos") for it in items):
        return ("pair",)
    shown = {(t := find_task(name)) is not None and t.modality in ("image", "answer")
             for name in tasks}  # fmt: skip
    return tuple(k for k, image in (("tot", False), ("itt", True)) if image in shown) or ("tot",)


def study_zip(items: Sequence[Any], kinds: Sequence[str], name: str = "items") -> bytes:
    """A zip of the benchmark file and `create-study.sh`, the `lexsem annotate create` command
    that makes a study of these items (every item, no sample) with `kinds` (`study_kinds`)."""
    fmt, file, data = benchmark_file(items, name)
    given = " ".join(f"--kind {k}" for k in kinds)
    script = (
        "#!/bin/sh\n"
        f"# a study of the {len(items)} items of {file} (lexsem explore): sh create-study.sh\n"
        "# STUDY.sqlite [OPTION...], options as `lexsem annotate create --help` shows (--kind\n"
        "# adds a kind, --gold, --annotators, --coco-val2017 for the images, ...); the kinds\n"
        f"# are those the runs scored: {', '.join(kinds)}\n"
        'study="${1:-study.sqlite}"\n'
        "[ $# -gt 0 ] && shift\n"
        f'lexsem annotate create "$study" -b "{fmt}:$(dirname "$0")/{file}" {given} "$@"\n'
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(file, data)
        z.writestr("create-study.sh", script)
    return buf.getvalue()

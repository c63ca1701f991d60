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
from collections.abc import Sequence
from typing import Any

from lexsem.errors import LexsemError

__all__ = ["MAX_EXPORT_ITEMS", "benchmark_file", "study_zip"]

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


def study_zip(items: Sequence[Any], name: str = "items") -> bytes:
    """A zip of the benchmark file and `create-study.sh`, the `lexsem annotate create` command
    that makes a study of these items (every item, no sample)."""
    fmt, file, data = benchmark_file(items, name)
    script = (
        "#!/bin/sh\n"
        f"# a study of the {len(items)} items of {file} (lexsem explore): sh create-study.sh\n"
        "# STUDY.sqlite [OPTION...], options as `lexsem annotate create --help` shows (--kind,\n"
        "# --gold, --annotators, --coco-val2017 for the images, ...)\n"
        'study="${1:-study.sqlite}"\n'
        "[ $# -gt 0 ] && shift\n"
        f'lexsem annotate create "$study" -b "{fmt}:$(dirname "$0")/{file}" "$@"\n'
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(file, data)
        z.writestr("create-study.sh", script)
    return buf.getvalue()

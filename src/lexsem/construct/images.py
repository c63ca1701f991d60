"""Stage `generate_images`: K images per caption from the recipe's image generator (BiVLC, §3
step 2: "For every hard negative caption in the dataset, we generate 4 corresponding images").

For each accepted row, the text of `column` becomes a prompt: with `strip_periods` every ``.``
is removed (BiVLC's script: ``negative_caption.str.replace(".", "")``), then `suffix` is
appended (BiVLC's: `BIVLC_SUFFIX`). Image i (0 <= i < k) of a prompt is one `ImageRequest`
(index i, the build's seed of that prompt and index, saved at `size` x `size` pixels), made
through the request store (`StageContext.images`): a rerun makes none again. Each image is
copied (hard-linked where the file system allows) from the cache into the build folder as
``images/<sha256>.png``, and the row gets the list of those paths, relative to the build folder,
in the column `output` (null for rejected rows). A row whose caption is empty is rejected
(``no caption``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from lexsem.atomic import atomic_path
from lexsem.construct.stage import Stage, StageContext, accepted, reject
from lexsem.errors import DataError, LexsemError
from lexsem.images.refs import unsafe_reason
from lexsem.models.image_gen import ImageRequest

__all__ = [
    "BIVLC_SUFFIX",
    "IMAGES_DIR",
    "build_image",
    "generate_images",
    "image_prompt",
    "image_requests",
]

BIVLC_SUFFIX = ", high resolution, professional, 4k, highly detailed"
IMAGES_DIR = "images"  # in the build folder


def build_image(base: Path, rel: Any, item: str, what: str = "image") -> Path:
    """The file of an image path relative to the build folder `base` (as `generate_images`
    writes them); a DataError naming `item` and `what` when the path is not a string, is unsafe
    or names no file."""
    if not isinstance(rel, str):
        raise DataError(
            f"{what} must be a path relative to the build folder, got {rel!r}", item=item
        )
    why = unsafe_reason(rel)
    if why is not None:
        raise DataError(f"{what} {rel!r}: {why}", item=item)
    path = base / rel
    if not path.is_file():
        raise DataError(f"{what} {rel!r} is not in the build folder {base}", item=item)
    return path


def image_prompt(text: str, suffix: str = "", strip_periods: bool = False) -> str:
    """The prompt of a caption (see the module doc)."""
    return (text.replace(".", "") if strip_periods else text) + suffix


def _check(rows: Any, column: str, k: Any, size: Any, batch_size: Any) -> None:
    if column not in rows.column_names:
        raise LexsemError(
            f"generate_images: the rows have no column {column!r} (setting `column`); they "
            f"have {', '.join(rows.column_names)}"
        )
    for name, value, low in (("k", k, 1), ("batch_size", batch_size, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise LexsemError(
                f"generate_images: `{name}` is a whole number >= {low}, not {value!r}"
            )
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 8):
        raise LexsemError(f"generate_images: `size` is a number of pixels >= 8, not {size!r}")


def _prompts(rows: Any, column: str, suffix: str, strip_periods: bool) -> list[str | None]:
    """The prompt of each row (None: rejected, or no caption)."""
    keep = accepted(rows).to_pylist()
    out: list[str | None] = []
    for ok, text in zip(keep, rows[column].to_pylist(), strict=True):
        usable = ok and isinstance(text, str) and text.strip()
        out.append(image_prompt(text.strip(), suffix, strip_periods) if usable else None)
    return out


def image_requests(
    rows: Any, *, column: str = "negative_caption", k: int = 4, suffix: str = "",
    strip_periods: bool = False, size: int | None = 512, batch_size: int = 4,
    output: str = "images",
) -> list[ImageRequest]:  # fmt: skip
    """The image requests `generate_images` makes for `rows` (k per accepted row)."""
    _check(rows, column, k, size, batch_size)
    return [
        ImageRequest(prompt, index, None, size)
        for prompt in _prompts(rows, column, suffix, strip_periods)
        if prompt is not None
        for index in range(k)
    ]


def _place(cached: Path, out: Path) -> str:
    """`cached` in the build folder's images (linked, else copied); its relative path."""
    rel = f"{IMAGES_DIR}/{cached.name}"
    dest = out / rel
    if dest.is_file() and dest.stat().st_size == cached.stat().st_size:
        return rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.unlink(missing_ok=True)  # a partial or damaged copy
    try:
        os.link(cached, dest)  # one step: the file is whole or absent
    except OSError:  # another file system, or links refused
        with atomic_path(dest) as tmp:
            shutil.copyfile(cached, tmp)
    return rel


def generate_images(
    rows: Any, ctx: StageContext | None, *, column: str = "negative_caption", k: int = 4,
    suffix: str = "", strip_periods: bool = False, size: int | None = 512, batch_size: int = 4,
    output: str = "images",
) -> Any:  # fmt: skip
    """Add `output`: the paths of `k` generated images per accepted row (see the module
    doc)."""
    import pyarrow as pa

    if ctx is None:
        raise LexsemError("generate_images: needs the build folder and its image generator")
    _check(rows, column, k, size, batch_size)
    if output in rows.column_names:
        raise LexsemError(f"generate_images: the rows already have a column {output!r}")
    prompts = _prompts(rows, column, suffix, strip_periods)
    requests = [ImageRequest(p, i, None, size) for p in prompts if p is not None for i in range(k)]
    files = ctx.images(requests, batch_size=batch_size) if requests else []
    placed = iter([_place(f, ctx.out) for f in files])
    column_out = [None if p is None else [next(placed) for _ in range(k)] for p in prompts]
    keep = accepted(rows).to_pylist()
    reasons = [
        "no caption" if ok and p is None else None for ok, p in zip(keep, prompts, strict=True)
    ]
    rows = rows.append_column(output, pa.array(column_out, pa.list_(pa.string())))
    ctx.count("images", len(files))
    ctx.log(f"{len(files)} images for {sum(p is not None for p in prompts)} captions")
    return reject(rows, reasons)


STAGE = Stage("generate_images", generate_images, requests=image_requests, image_generator=True)

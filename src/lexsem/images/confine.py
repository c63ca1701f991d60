"""Files named by paths that come from data, confined to a root folder.

The one check every such path goes through: image references under a named root
(`ImageStore`: COCO and added roots), image paths stored inside Hugging Face parquet files
(the Hugging Face loaders: the root is the dataset's snapshot folder) and path-only image
records given to `ImageStore.register_image` with a ``root``:

1. the form of the path (`unsafe_reason`): absolute, naming a drive, with a ``..`` component or
   a NUL — refused;
2. its real path, symbolic links followed, must lie inside the real path of the root — else
   refused (a link in the folder pointing to ``/etc``);
3. it must be a regular file (a dangling link or a folder is "missing").

Refusals are `ImageError`s with reason ``"unsafe"``, which are never skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from lexsem.images.refs import ImageError, unsafe_reason

__all__ = ["confined_file", "refuse_unsafe"]

REF_HINT = "references are relative to their root"


def refuse_unsafe(rel: str, ref: str, hint: str = REF_HINT) -> None:
    """Raise an ``"unsafe"`` `ImageError` naming `ref` when the form of `rel` is refused."""
    why = unsafe_reason(rel)
    if why is not None:
        raise ImageError(f"image {ref!r} is refused: {why} ({hint})", ref=ref, reason="unsafe")


def confined_file(folder: Path, rel: str, *, ref: str, root: Path | None = None) -> Path | None:
    """The real path of ``folder / rel`` (`rel` already checked by `refuse_unsafe`), or None when
    nothing is there. `ImageError`: ``"unsafe"`` when the real path is outside `root` (default
    `folder`), ``"missing"`` when it is a dangling link or not a regular file."""
    candidate = folder / rel
    if not os.path.lexists(candidate):
        return None
    real_root = Path(os.path.realpath(root if root is not None else folder))
    real = Path(os.path.realpath(candidate))
    if real != real_root and not real.is_relative_to(real_root):
        raise ImageError(
            f"image {ref!r} is refused: {candidate} resolves to {real}, outside its root "
            f"{real_root}",
            ref=ref,
            reason="unsafe",
            file=candidate,
        )
    if not real.is_file():
        what = "a dangling link" if not real.exists() else "not a regular file"
        raise ImageError(
            f"image {ref!r}: {candidate} is {what}", ref=ref, reason="missing", file=candidate
        )
    return real

"""A COCO captions annotation file (``captions_train2017.json``) read and checked, for every
reader of one (a build's ``coco_captions`` input, `lexsem train-data`'s NegCLIP manifest).

The file is COCO's: ``{"images": [{"id", "file_name"}, ...], "annotations": [{"id",
"image_id", "caption"}, ...]}``. `read_coco_captions` gives one `CocoCaption` per annotation, in
file order, with the caption as the file has it (each reader normalises its spacing as its
reference does). The ``images`` list may be left out unless `images_required`: file names are
then ``'%012d.jpg' % image_id`` (BiVLC's ``TROHN_Text_generation.py`` names them so).

Every problem is a `DataError` naming the file and the entry (``images[3]``,
``annotations[12]``), raised before any caption is returned: JSON that is malformed or repeats
a key in one object (`lexsem.benchmarks.formats.read_json`), an image entry without an integer
``id`` or with an unsafe ``file_name`` (`lexsem.images.refs.unsafe_reason`), an image id listed
twice, no annotations, an annotation that is not an object, whose ``image_id`` is not an
integer or names no listed image, or whose caption is not text or is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.benchmarks.formats import read_json
from lexsem.errors import DataError
from lexsem.images.refs import unsafe_reason

__all__ = ["CocoCaption", "read_coco_captions"]


@dataclass(frozen=True)
class CocoCaption:
    """One annotation: its position in ``annotations``, its ``id`` (None when it has no integer
    id), its image's id and file name, and its caption as written in the file."""

    index: int
    id: int | None
    image_id: int
    file_name: str
    caption: str


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_coco_captions(
    path: str | Path, *, images_required: bool = False, limit: int | None = None
) -> list[CocoCaption]:
    """The annotations of the COCO captions file `path` (see the module doc); `limit`: only the
    first annotations are read and checked."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(
            f"expected a JSON object with 'annotations' (COCO captions format), got "
            f"{type(data).__name__}",
            file=path,
        )
    names = _file_names(data, path, images_required)
    annotations = data.get("annotations")
    if not isinstance(annotations, list):
        raise DataError("expected a list 'annotations' (COCO captions format)", file=path)
    if not annotations:
        raise DataError("the file has no annotations", file=path)
    out: list[CocoCaption] = []
    for i, rec in enumerate(annotations[:limit] if limit is not None else annotations):
        where = f"annotations[{i}]"
        if not isinstance(rec, dict):
            raise DataError("an annotation must be an object", file=path, item=where)
        image_id, caption, ann_id = rec.get("image_id"), rec.get("caption"), rec.get("id")
        if not _is_int(image_id):
            raise DataError(
                f"'image_id' must be an integer, got {image_id!r}", file=path, item=where
            )
        if names is not None and image_id not in names:
            raise DataError(f"'image_id' {image_id} names no image", file=path, item=where)
        if not isinstance(caption, str):
            raise DataError(f"'caption' must be a string, got {caption!r}", file=path, item=where)
        if not caption.strip():
            raise DataError("'caption' is empty", file=path, item=where)
        name = names[image_id] if names is not None else f"{image_id:012d}.jpg"
        out.append(CocoCaption(i, ann_id if _is_int(ann_id) else None, image_id, name, caption))
    return out


def _file_names(data: Mapping[str, Any], path: Path, required: bool) -> dict[int, str] | None:
    """image id -> file name of the ``images`` list; None when the file has none."""
    images = data.get("images")
    if images is None and not required:
        return None
    if not isinstance(images, list):
        raise DataError("expected a list 'images' (COCO captions format)", file=path)
    out: dict[int, str] = {}
    for i, rec in enumerate(images):
        where = f"images[{i}]"
        if not isinstance(rec, dict):
            raise DataError("an image entry must be an object", file=path, item=where)
        image_id, name = rec.get("id"), rec.get("file_name")
        if not _is_int(image_id):
            raise DataError(f"'id' must be an integer, got {image_id!r}", file=path, item=where)
        why = unsafe_reason(name) if isinstance(name, str) else "not a string"
        if why is not None:
            raise DataError(f"unusable 'file_name' {name!r}: {why}", file=path, item=where)
        if image_id in out:
            raise DataError(f"image id {image_id} appears twice", file=path, item=where)
        out[image_id] = name
    return out

"""The recipe input ``[input] source = "coco_captions"``: the captions of a COCO captions
annotation file (``captions_train2017.json``), one row per caption, as BiVLC's TROHN-Text
generation reads them (BiVLC, §5.1: "we take image-caption pairs from the COCO train split";
its ``src/Training_data/TROHN_Text/TROHN_Text_generation.py``).

The file is COCO's: ``{"images": [{"id", "file_name"}, ...], "annotations": [{"id",
"image_id", "caption"}, ...]}``. One row per annotation, in file order:

- ``image_id`` (int) and ``image``: the image as an image-store reference
  ``<root>:<file name>`` (``train2017:000000391979.jpg``; `lexsem train --coco-train2017 DIR`
  and evaluation resolve it). The file name is the ``images`` entry's ``file_name``; a file
  without an ``images`` list names images as BiVLC's script does, ``'%012d.jpg' % image_id``;
- ``caption``: the caption with surrounding white space removed and each line break made a
  space (the script's ``str.strip()`` then ``str.replace('\\n', ' ')``);
- ``image_path``: with ``images`` (the folder of the image files), the file's path; each file
  is checked to exist;
- provenance: ``source = "coco"``, ``source_id`` the annotation's ``id`` (the annotation's
  position in the file when it has none).

`limit` keeps the first annotations. Every problem is a `DataError` naming the file and the
item (``annotations[12]``), raised before any row is returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from lexsem.construct.inputs import InputTable, register_source
from lexsem.digests import file_sha256
from lexsem.errors import DataError
from lexsem.images.refs import ROOT_NAME_RE, unsafe_reason

__all__ = ["SOURCE", "coco_captions", "coco_captions_source"]

SOURCE = "coco"

SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_id", pa.string()),
        ("image_id", pa.int64()),
        ("image", pa.string()),
        ("caption", pa.string()),
    ]
)


def _read(path: Path) -> Mapping[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(
            f"cannot read the COCO captions file: {exc.strerror or exc}", file=path
        ) from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise DataError("not valid UTF-8", file=path) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"not JSON: {exc.msg}", file=path, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise DataError(
            f"expected a JSON object with 'annotations' (COCO captions format), got "
            f"{type(data).__name__}",
            file=path,
        )
    return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _file_names(data: Mapping[str, Any], path: Path) -> dict[int, str] | None:
    """image id -> file name of the ``images`` list; None when the file has none."""
    images = data.get("images")
    if images is None:
        return None
    if not isinstance(images, list):
        raise DataError("'images' must be a list (COCO captions format)", file=path)
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


def _caption(value: Any, path: Path, where: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"'caption' must be a string, got {value!r}", file=path, item=where)
    text = value.strip().replace("\n", " ")
    if not text:
        raise DataError("'caption' is empty", file=path, item=where)
    return text


def coco_captions(
    path: str | Path,
    *,
    images: str | Path | None = None,
    root: str = "train2017",
    limit: int | None = None,
) -> pa.Table:
    """One row per caption of the COCO captions file `path` (see the module doc)."""
    path = Path(path)
    if not isinstance(root, str) or not ROOT_NAME_RE.match(root):
        raise DataError(f"root must be an image root name such as 'train2017', not {root!r}")
    if limit is not None and (not _is_int(limit) or limit < 1):
        raise DataError(f"limit must be a whole number of at least 1, not {limit!r}")
    folder = Path(images).expanduser() if images is not None else None
    if folder is not None and not folder.is_dir():
        raise DataError("the COCO images folder does not exist", file=folder)
    data = _read(path)
    names = _file_names(data, path)
    annotations = data.get("annotations")
    if not isinstance(annotations, list):
        raise DataError("expected a list 'annotations' (COCO captions format)", file=path)
    if not annotations:
        raise DataError("the file has no annotations", file=path)
    cols: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    paths: list[str] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(annotations[:limit] if limit is not None else annotations):
        where = f"annotations[{i}]"
        if not isinstance(rec, dict):
            raise DataError("an annotation must be an object", file=path, item=where)
        image_id = rec.get("image_id")
        if not _is_int(image_id):
            raise DataError(
                f"'image_id' must be an integer, got {image_id!r}", file=path, item=where
            )
        if names is not None and image_id not in names:
            raise DataError(f"'image_id' {image_id} names no image", file=path, item=where)
        name = names[image_id] if names is not None else f"{image_id:012d}.jpg"
        ann_id = rec.get("id")
        source_id = str(ann_id) if _is_int(ann_id) else str(i)
        if source_id in seen:
            raise DataError(
                f"annotation id {source_id} repeats annotations[{seen[source_id]}]",
                file=path,
                item=where,
            )
        seen[source_id] = i
        if folder is not None:
            file = folder / name
            if not file.is_file():
                raise DataError(f"image {name!r} is not in {folder}", file=path, item=where)
            paths.append(str(file))
        cols["source"].append(SOURCE)
        cols["source_id"].append(source_id)
        cols["image_id"].append(image_id)
        cols["image"].append(f"{root}:{name}")
        cols["caption"].append(_caption(rec.get("caption"), path, where))
    table = pa.Table.from_pydict(cols, schema=SCHEMA)
    if folder is not None:
        table = table.append_column("image_path", pa.array(paths, pa.string()))
    return table


def coco_captions_source(
    path: str,
    images: str | None = None,
    root: str = "train2017",
    limit: int | None = None,
) -> InputTable:
    """The recipe input ``[input] source = "coco_captions"`` (`[input.settings]`: `path`, and
    optionally `images`, `root`, `limit`), with the file's sha256."""
    table = coco_captions(path, images=images, root=root, limit=limit)
    return InputTable(table, file_sha256(Path(path)), str(path))


register_source("coco_captions", coco_captions_source)

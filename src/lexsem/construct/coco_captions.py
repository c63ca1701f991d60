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

`limit` keeps the first annotations. The file is read and checked by
`lexsem.benchmarks.coco_captions`; every problem is a `DataError` naming the file and the item
(``annotations[12]``), raised before any row is returned: those it finds, an annotation id
given twice, and an image missing from `images`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from lexsem.benchmarks.coco_captions import read_coco_captions
from lexsem.construct.inputs import InputTable
from lexsem.digests import file_sha256
from lexsem.errors import DataError
from lexsem.images.refs import ROOT_NAME_RE

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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
    cols: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    paths: list[str] = []
    seen: dict[str, int] = {}
    for c in read_coco_captions(path, limit=limit):
        where = f"annotations[{c.index}]"
        source_id = str(c.id) if c.id is not None else str(c.index)
        if source_id in seen:
            raise DataError(
                f"annotation id {source_id} repeats annotations[{seen[source_id]}]",
                file=path,
                item=where,
            )
        seen[source_id] = c.index
        if folder is not None:
            file = folder / c.file_name
            if not file.is_file():
                raise DataError(f"image {c.file_name!r} is not in {folder}", file=path, item=where)
            paths.append(str(file))
        cols["source"].append(SOURCE)
        cols["source_id"].append(source_id)
        cols["image_id"].append(c.image_id)
        cols["image"].append(f"{root}:{c.file_name}")
        cols["caption"].append(c.caption.strip().replace("\n", " "))
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

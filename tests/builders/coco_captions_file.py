"""A tiny file in COCO's captions annotation format (``captions_train2017.json``) and a folder
of small images it names, for the `coco_captions` input source and the TROHN recipes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: (annotation id, image id, caption) in file order; image 9 has two captions.
ANNOTATIONS: tuple[tuple[int, int, str], ...] = (
    (101, 9, "  A dog sits on a red sofa.\n"),
    (102, 9, "a brown dog on a couch"),
    (103, 25, "Two cats sleeping\nin the sun"),
    (104, 30, "a man riding a bike down a street"),
    (105, 42, "A plate of food next to a glass of wine."),
    (106, 57, "three people standing near a bus"),
)


def coco_payload(annotations: tuple[tuple[int, int, str], ...] = ANNOTATIONS) -> dict[str, Any]:
    """The JSON object of a COCO captions file with `annotations`, and an ``images`` entry per
    image id (COCO's 12-digit file names)."""
    ids = sorted({image_id for _, image_id, _ in annotations})
    return {
        "info": {"description": "tiny"},
        "images": [{"id": i, "file_name": f"{i:012d}.jpg", "height": 8, "width": 8} for i in ids],
        "annotations": [{"id": a, "image_id": i, "caption": c} for a, i, c in annotations],
    }


def write_coco_captions(folder: Path, *, images: bool = True, size: int = 40) -> Path:
    """`folder/captions_train2017.json` and, with `images`, `folder/train2017/<id>.jpg` (a
    small image of its own colour per id): the JSON file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    payload = coco_payload()
    path = folder / "captions_train2017.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    if images:
        from PIL import Image

        (folder / "train2017").mkdir(exist_ok=True)
        for n, entry in enumerate(payload["images"]):
            colour = (40 * n % 256, 255 - 30 * n % 256, 90)
            Image.new("RGB", (size, size), colour).save(folder / "train2017" / entry["file_name"])
    return path

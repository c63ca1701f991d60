"""Where images live on disk: the image base and the COCO folders' environment variables.

The image base is ``$LEXSEM_IMAGE_ROOT``, else ``<cache>/images`` — where `download_coco`
installs the official archives (``coco/val2017``, ``coco/train2017``). ``$LEXSEM_COCO_VAL2017``
and ``$LEXSEM_COCO_TRAIN2017`` point at existing COCO folders instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import lexsem.paths as paths

__all__ = [
    "COCO_HINT",
    "COCO_TRAIN_ENV",
    "COCO_VAL_ENV",
    "IMAGE_ROOT_ENV",
    "env_path",
    "image_base",
]

COCO_VAL_ENV = "LEXSEM_COCO_VAL2017"
COCO_TRAIN_ENV = "LEXSEM_COCO_TRAIN2017"
IMAGE_ROOT_ENV = "LEXSEM_IMAGE_ROOT"

COCO_HINT = (
    "get COCO with `lexsem download coco-val2017` (and `coco-train2017` for train images), or "
    f"point lexsem at existing folders with --coco-val2017 DIR / {COCO_VAL_ENV}=DIR and "
    f"--coco-train2017 DIR / {COCO_TRAIN_ENV}=DIR"
)


def image_base(image_root: str | Path | None = None, cache_root: str | Path | None = None) -> Path:
    """The folder holding downloaded images: `image_root`, else $LEXSEM_IMAGE_ROOT, else
    ``<cache_root>/images`` (`cache_root` defaulting to `lexsem.paths.cache_dir()`)."""
    if image_root is not None:
        return Path(image_root).expanduser()
    env = os.environ.get(IMAGE_ROOT_ENV)
    if env:
        return Path(env).expanduser()
    return paths.cache_dir(cache_root) / "images"


def env_path(var: str) -> Path | None:
    """The path in environment variable `var`, or None when it is unset or empty."""
    value = os.environ.get(var)
    return Path(value).expanduser() if value else None

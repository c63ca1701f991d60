"""The image steps of the VQAScore reference's recipes (`lexsem.models.vlm.reference`), done on
the decoded image before the model's processor sees it.

- `pad_to_square`: LLaVA's `expand2square` (t2v_metrics `mm_utils.py`): the image pasted in the
  middle of a square of its longer side, filled with the image processor's mean colour
  (`int(m * 255)` per channel);
- `resize_center_crop`: InstructBLIP's torchvision transform (`instructblip_model.py`):
  `Resize(size, BICUBIC)` of the short side (the long side `int(size * long / short)`), then
  `CenterCrop(size)` (the offsets `int(round((side - size) / 2))`);
- `qwen_resize`: `qwen_vl_utils.fetch_image` (what t2v_metrics' `qwen2vl_model.py` calls through
  `process_vision_info`): each side rounded to a multiple of 28, the area kept within 4 and
  16384 tiles of 28 x 28 (aspect kept), PIL's default (bicubic) resize.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["pad_to_square", "prepare_image", "qwen_resize", "resize_center_crop"]

QWEN_FACTOR = 28  # qwen_vl_utils: image_patch_size 14 x spatial merge 2
QWEN_MIN_TILES, QWEN_MAX_TILES = 4, 16384


def pad_to_square(image: Any, mean: Sequence[float]) -> Any:
    """`image` in the middle of a square of its longer side filled with `mean` (0..1)."""
    from PIL import Image

    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    square = Image.new(image.mode, (side, side), tuple(int(m * 255) for m in mean))
    square.paste(image, ((side - w) // 2, (side - h) // 2))
    return square


def resize_center_crop(image: Any, size: int) -> Any:
    """The short side resized to `size` (bicubic), then the centre `size` x `size` square."""
    from PIL import Image

    w, h = image.size
    new = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)
    if new != (w, h):
        image = image.resize(new, Image.Resampling.BICUBIC)
    left = round((new[0] - size) / 2.0)
    top = round((new[1] - size) / 2.0)
    return image.crop((left, top, left + size, top + size))


def qwen_size(height: int, width: int) -> tuple[int, int]:
    """(height, width) a `height` x `width` image is resized to by `qwen_resize`."""
    f = QWEN_FACTOR
    lo, hi = QWEN_MIN_TILES * f * f, QWEN_MAX_TILES * f * f
    h, w = max(f, round(height / f) * f), max(f, round(width / f) * f)
    if h * w > hi:
        beta = math.sqrt(height * width / hi)
        h, w = math.floor(height / beta / f) * f, math.floor(width / beta / f) * f
    elif h * w < lo:
        beta = math.sqrt(lo / (height * width))
        h, w = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
    return h, w


def qwen_resize(image: Any) -> Any:
    """`image` resized as `qwen_vl_utils.fetch_image` resizes it (see the module doc)."""
    h, w = qwen_size(image.size[1], image.size[0])
    return image if (w, h) == image.size else image.resize((w, h))


def _processor_size(image_processor: Any) -> int:
    size = getattr(image_processor, "size", None) or {}
    if not isinstance(size, dict):
        size = dict(size)
    for key in ("height", "shortest_edge", "width"):
        if size.get(key):
            return int(size[key])
    raise ValueError(f"the image processor's size {size!r} has no height or shortest edge")


def prepare_image(step: str, image: Any, processor: Any) -> Any:
    """`image` after the recipe's image step `step` (``whole``: unchanged)."""
    if step == "whole":
        return image
    proc = getattr(processor, "image_processor", processor)
    if step == "pad":
        return pad_to_square(image, getattr(proc, "image_mean", None) or (0.5, 0.5, 0.5))
    if step == "qwen_resize":
        return qwen_resize(image)
    if step == "crop":
        return resize_center_crop(image, _processor_size(proc))
    raise ValueError(f"unknown image step {step!r}")

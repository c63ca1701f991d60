"""Decoded images kept in memory across evaluations (`Evaluator` owns one).

A training loop evaluates the same images after every epoch with new weights: the request
store cannot serve their embeddings (the model's fingerprint changed), but the pixels have not
changed. `DecodedImages` keeps each decoded PIL image under its image key
(`lexsem.engine.keys.image_key`: the bytes' content *and* the decode profile), so a later
run preprocesses it straight from memory instead of reading and decoding the file again.

The key is content-addressed: a file edited between runs hashes to another key and is decoded
afresh; two decode profiles of one file are two entries.

Admission, not eviction: images are kept while the byte budget has room and later ones are
not kept. An evaluation reads the same images in the same order every time, and an LRU cache
smaller than that cycle would evict each image just before it is needed again (no hit at
all); keeping the first that fit serves ``budget / size`` of them every run.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = ["DEFAULT_DECODED_IMAGE_MB", "DecodedImages", "image_nbytes"]

#: The default budget of an `Evaluator`'s decoded images, in MiB (`EvalConfig.keep_decoded_mb`):
#: about 1,100 COCO images of 640 x 480.
DEFAULT_DECODED_IMAGE_MB = 1024


def image_nbytes(image: Image) -> int:
    """The bytes a decoded image holds (width x height x bytes per pixel)."""
    per_pixel = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I": 4, "F": 4}.get(image.mode)
    if per_pixel is None:
        per_pixel = len(image.getbands())
    return image.width * image.height * per_pixel


class DecodedImages:
    """Decoded PIL images by image key, within a byte budget (0: keep nothing)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self.hits = 0
        self._images: dict[str, Image] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._images)

    def __contains__(self, key: object) -> bool:
        return key in self._images

    def get(self, key: str) -> Image | None:
        return self._images.get(key)

    @property
    def has_room(self) -> bool:
        return self.nbytes < self.max_bytes

    def put(self, key: str, image: Image) -> bool:
        """Keep `image` under `key` if the budget has room for it; True when kept."""
        size = image_nbytes(image)
        with self._lock:
            if key in self._images:
                return True
            if self.nbytes + size > self.max_bytes:
                return False
            self._images[key] = image
            self.nbytes += size
            return True

    def clear(self) -> None:
        with self._lock:
            self._images.clear()
            self.nbytes = 0

    def __repr__(self) -> str:
        return (
            f"DecodedImages({len(self)} images, {self.nbytes / 2**20:.1f} of "
            f"{self.max_bytes / 2**20:.0f} MiB)"
        )

"""A study's own images: each image an item names is read once at creation (through lexsem's
`ImageStore`, or as a file beside a build table), checked to be an image, and stored in the
study file under the sha256 of its bytes. The server serves only these."""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from lexsem.annotate import store
from lexsem.errors import DataError

__all__ = ["SHA_RE", "ImageSink", "file_or_store_reader"]

SHA_RE = re.compile(r"[0-9a-f]{64}")
_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


class ImageSink:
    """`sink(ref) -> sha256`: the bytes `read(ref)` gives, stored once in the study."""

    def __init__(self, con: store.Connection, read: Callable[[str], bytes]) -> None:
        self.con, self.read = con, read
        self._seen: dict[str, str] = {}

    def __call__(self, ref: str) -> str:
        if ref in self._seen:
            return self._seen[ref]
        data = self.read(ref)
        try:
            with Image.open(io.BytesIO(data)) as img:
                fmt = img.format or ""
                img.verify()
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            raise DataError(f"not a readable image ({exc})", item=ref) from None
        if fmt not in _MIME:  # stored as PNG: every browser shows it
            with Image.open(io.BytesIO(data)) as img:
                buf = io.BytesIO()
                img.save(buf, "PNG")
            data, fmt = buf.getvalue(), "PNG"
        sha = hashlib.sha256(data).hexdigest()
        store.add_image(self.con, sha, _MIME[fmt], data)
        self._seen[ref] = sha
        return sha


def file_or_store_reader(
    folder: Path | None, store_read: Callable[[str], bytes]
) -> Callable[[str], bytes]:
    """Read a reference as a file (absolute, or relative to `folder`: a build table's own
    folder) when there is one, else through lexsem's image store (`ROOT:path`, COCO names)."""

    def read(ref: str) -> bytes:
        path = Path(ref)
        if folder is not None and not path.is_absolute():
            path = folder / path
        if path.is_file():
            return path.read_bytes()
        return store_read(ref)

    return read

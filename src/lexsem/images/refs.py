"""Image references: their syntax, which ones are refused, and where a reference's bytes are.

A reference is ``ROOT:relative/path`` (a file under a named root), a bare ``relative/path``
(under the store's default root, ``coco2017``), or ``mem:KEY`` (bytes held in memory or served
by a lazy mapping). A path that is absolute, names a drive, has a ``..`` component or a NUL is
refused (`unsafe_reason`); `ImageError` says why a reference cannot be used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lexsem.errors import DataError

__all__ = [
    "DEFAULT_ROOT",
    "LIMITED_READ",
    "MEM",
    "PREFIX_RE",
    "ROOT_NAME_RE",
    "SKIPPABLE",
    "ImageError",
    "ResolvedImage",
    "unsafe_reason",
]

DEFAULT_ROOT = "coco2017"
MEM = "mem"

# A root prefix has at least two characters, so a Windows drive ("C:") is never taken for one.
PREFIX_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]+):(.*)$", re.DOTALL)
ROOT_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]+$")
_SEP_RE = re.compile(r"[\\/]+")

#: The method by which a lazy mapping serves bytes under a pixel limit (see `ResolvedImage`).
LIMITED_READ = "read_limited"

#: Reasons an `ImageError` may carry that may be skipped (``on_error="skip"``).
SKIPPABLE = frozenset({"missing", "unreadable", "undecodable", "changed", "too-large"})


class ImageError(DataError):
    """An image reference that cannot be used. `reason` says why: ``missing``, ``unreadable``,
    ``undecodable``, ``changed`` (the file changed while lexsem read it), ``too-large`` (more
    pixels than the limit, `lexsem.images.pixels`) — these may be skipped on request — or
    ``unsafe`` / ``unknown-root`` / ``invalid``, which never are."""

    def __init__(
        self,
        message: str,
        *,
        ref: str,
        reason: str,
        file: str | Path | None = None,
        item: str | None = None,
    ) -> None:
        self.ref = ref
        self.reason = reason
        self.detail = message
        super().__init__(message, file=file, item=item)

    @property
    def skippable(self) -> bool:
        return self.reason in SKIPPABLE

    def for_item(self, item: str | None) -> ImageError:
        """The same error, naming `item` (a benchmark item) as well."""
        if item is None or item == self.item:
            return self
        return ImageError(self.detail, ref=self.ref, reason=self.reason, file=self.file, item=item)

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across DataLoader workers
        return (_rebuild_error, (self.detail, self.ref, self.reason, self.file, self.item))


def _rebuild_error(
    message: str, ref: str, reason: str, file: str | None, item: str | None
) -> ImageError:
    return ImageError(message, ref=ref, reason=reason, file=file, item=item)


@dataclass(frozen=True)
class ResolvedImage:
    """Where a reference's bytes are: a real file path inside its root, in-memory bytes, or a
    lazy mapping (ref -> bytes) that reads them on access.

    Small, so DataLoader workers can read the image themselves (a lazy mapping is inherited by
    forked workers; under spawn it must be picklable). A mapping that decodes images to make
    its bytes (the ARO crops) offers ``read_limited(ref, max_pixels)``, called with
    `max_pixels` (the store's pixel limit) instead of ``mapping[ref]``.
    """

    ref: str
    path: Path | None = None
    data: bytes | None = field(default=None, repr=False)
    mapping: Mapping[str, bytes] | None = field(default=None, repr=False, compare=False)
    max_pixels: int | None = field(default=None, compare=False)

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        if self.mapping is not None:
            return self._read_mapping(self.mapping)
        assert self.path is not None
        try:
            with open(self.path, "rb") as fh:
                return fh.read()
        except FileNotFoundError as exc:
            what = f"disappeared before it could be read ({exc.strerror})"
            raise self._error(what, "missing", self.path) from None
        except OSError as exc:
            raise self._error(f"cannot be read: {exc}", "unreadable", self.path) from None

    def _error(self, what: str, reason: str, file: Path | None = None) -> ImageError:
        """The error `image 'REF' WHAT` about this image (naming `file`, where it is one)."""
        return ImageError(f"image {self.ref!r} {what}", ref=self.ref, reason=reason, file=file)

    def _read_mapping(self, mapping: Mapping[str, bytes]) -> bytes:
        limited = getattr(mapping, LIMITED_READ, None)
        try:
            if callable(limited) and self.max_pixels is not None:
                blob = limited(self.ref, self.max_pixels)
            else:
                blob = mapping[self.ref]
        except ImageError:  # the mapping's own verdict (too large, unsafe path): kept as is
            raise
        except KeyError:
            raise self._error("is no longer provided by its dataset", "missing") from None
        except DataError as exc:  # e.g. an HF row whose image field is empty
            raise self._error(f"cannot be read: {exc}", "unreadable") from None
        except Exception as exc:
            raise self._error(
                f"cannot be read: {type(exc).__name__}: {exc}", "unreadable"
            ) from None
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise ImageError(
                f"image {self.ref!r}: its dataset returned {type(blob).__name__}, not bytes",
                ref=self.ref,
                reason="unreadable",
            )
        return bytes(blob)


def unsafe_reason(rel: str) -> str | None:
    """Why the relative part of a reference is refused, or None when its form is acceptable."""
    if rel == "":
        return "the path is empty"
    if "\x00" in rel:
        return "the path contains a NUL character"
    if rel.startswith(("/", "\\")) or PurePosixPath(rel).is_absolute():
        return "the path is absolute"
    win = PureWindowsPath(rel)
    if win.drive or win.is_absolute():
        return "the path names a drive"
    if ".." in _SEP_RE.split(rel):
        return "the path has a '..' component"
    return None

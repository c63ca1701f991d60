"""sha256 digests of JSON values and of files: the one recipe for each, below every layer that
keys something by content (request keys, model fingerprints, job ids, build settings, pinned
downloads, frozen benchmarks, model weights).

- `canonical_json(value)`: `value` as canonical JSON bytes (sorted keys, no whitespace, UTF-8,
  no NaN/Infinity); `json_sha256(value)` is the sha256 hex of those bytes. Keys stored on disk
  by earlier versions keep their bytes through the options: `nan=True` writes NaN/Infinity as
  Python's `json` does, `default` turns other values into JSON ones (e.g. `str`), and
  ``layout="python"`` is `json.dumps(value, sort_keys=True)`'s own layout (``", "`` and
  ``": "``, non-ASCII as ``\\u`` escapes).
- `file_sha256(path)`: the sha256 hex of a file's bytes, read in 1 MiB blocks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

__all__ = ["canonical_json", "file_sha256", "json_sha256"]

_BLOCK = 1 << 20  # 1 MiB

Layout = Literal["compact", "python"]


def canonical_json(
    value: Any,
    *,
    nan: bool = False,
    default: Callable[[Any], Any] | None = None,
    layout: Layout = "compact",
) -> bytes:
    """`value` as canonical JSON (see the module doc for `nan`, `default` and `layout`).

    Raises `TypeError` for values JSON cannot hold (without `default`) and `ValueError` for
    NaN or Infinity (without `nan`).
    """
    compact = layout == "compact"
    try:
        text = json.dumps(
            value,
            sort_keys=True,
            separators=(",", ":") if compact else (", ", ": "),
            ensure_ascii=not compact,
            allow_nan=nan,
            default=default,
        )
    except TypeError as exc:
        raise TypeError(f"not a JSON value: {exc}") from None
    return text.encode("utf-8")


def json_sha256(value: Any, **options: Any) -> str:
    """The sha256 hex digest of ``canonical_json(value, **options)``."""
    return hashlib.sha256(canonical_json(value, **options)).hexdigest()


def file_sha256(path: str | Path) -> str:
    """The sha256 hex digest of the bytes of the file at `path` (an `OSError` when it cannot
    be read)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def head_tail_sha256(path: str | Path, span: int) -> str:
    """The sha256 hex digest of the first and the last `span` bytes of the file at `path` (a
    file of at least `span` bytes: the quick identity of a very large weights file)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        h.update(fh.read(span))
        fh.seek(-span, 2)
        h.update(fh.read(span))
    return h.hexdigest()

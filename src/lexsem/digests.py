"""sha256 digests of JSON values and of files: the one recipe for each, below every layer that
keys something by content (request keys, model fingerprints, job ids, build settings, pinned
downloads, frozen benchmarks, model weights).

- `canonical_json(value)`: `value` as canonical JSON bytes (sorted keys, no whitespace, UTF-8,
  no NaN/Infinity); `json_sha256(value)` is the sha256 hex of those bytes. Keys stored on disk
  by earlier versions keep their bytes through the options: `nan=True` writes NaN/Infinity as
  Python's `json` does, `default` turns other values into JSON ones (e.g. `str`), and
  ``layout="python"`` is `json.dumps(value, sort_keys=True)`'s own layout (``", "`` and
  ``": "``, non-ASCII as ``\\u`` escapes).
- `file_sha256(path)`: the sha256 hex of a file's bytes, read in 1 MiB blocks;
  `sha256_file(path)` the same, memoised.
- `memo_file(path, recipe, compute)`: the one memo of file digests, for the life of the process,
  keyed by the recipe and the file's resolved path, size and modification time (ns), so that
  digesting an unchanged file again is free (`sha256_file`; a model file's digest,
  `lexsem.models.source.file_digest`); `remember_file` stores a digest already computed.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "canonical_json",
    "file_sha256",
    "head_tail_sha256",
    "json_sha256",
    "memo_file",
    "remember_file",
    "sha256_file",
]

_BLOCK = 1 << 20  # 1 MiB

Layout = Literal["compact", "python"]

# (recipe, resolved path, size, mtime_ns) -> digest, for files digested in this process
_file_memo: dict[tuple[str, str, int, int], str] = {}
_file_memo_lock = threading.Lock()


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


def _memo_key(path: Path, recipe: str) -> tuple[str, str, int, int]:
    st = path.stat()
    return (recipe, str(path.resolve()), st.st_size, st.st_mtime_ns)


def memo_file(path: str | Path, recipe: str, compute: Callable[[Path], str]) -> str:
    """`compute(path)`, memoised by `recipe` and the file's resolved path, size and
    modification time (ns): a file changed since is digested again (an `OSError` when it
    cannot be read)."""
    path = Path(path)
    key = _memo_key(path, recipe)
    with _file_memo_lock:
        cached = _file_memo.get(key)
    if cached is not None:
        return cached
    digest = compute(path)
    with _file_memo_lock:
        _file_memo[key] = digest
    return digest


def remember_file(path: str | Path, recipe: str, digest: str) -> None:
    """Store `digest` as `recipe`'s digest of the file at `path` as it is now."""
    key = _memo_key(Path(path), recipe)
    with _file_memo_lock:
        _file_memo[key] = digest


def sha256_file(path: str | Path) -> str:
    """`file_sha256(path)`, memoised (`memo_file`)."""
    return memo_file(path, "sha256", file_sha256)

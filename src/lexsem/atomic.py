"""Atomic file writes: write to a temporary file beside the target, fsync, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on success it replaces `target` atomically.

    On any exception the temporary file is removed and `target` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_open(target: str | Path, mode: str = "w", **kwargs: object) -> Iterator[IO]:
    """Open a temporary file for writing; it becomes `target` only if the block succeeds."""
    with atomic_path(target) as tmp, open(tmp, mode, **kwargs) as fh:  # type: ignore[call-overload]
        yield fh

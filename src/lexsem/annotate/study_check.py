"""A study file checked before it is used: `check_study(path, writable=...)` raises one
`LexsemError` line naming the file and what is wrong, so that `lexsem annotate serve` never
starts on a file that would lose the first answer and `status` / `export` never print a
traceback.

Checked: the file exists and is a lexsem study (`store.connect`); for serving, that SQLite can
write it (not on a read-only file system, the file writable, its folder writable: SQLite
writes its ``-wal`` and ``-shm`` files beside it, as are those files where they exist); and
that SQLite's ``quick_check`` finds nothing (`store.integrity_problem`). `loose_mode(path)`
says when others may read the file (it holds the study's secret; lexsem writes it 0600).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lexsem.annotate import store
from lexsem.errors import LexsemError

__all__ = ["check_study", "loose_mode"]


def _not_writable(path: Path) -> str | None:
    """Why SQLite could not write the study at `path`, or None."""
    folder = path.parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "it lies on a read-only file system"
    except OSError:
        pass
    if not os.access(path, os.W_OK):
        return f"the file is read-only (mode {stat.S_IMODE(path.stat().st_mode):04o})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is read-only (SQLite writes its -wal and -shm files there)"
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists() and not os.access(side, os.R_OK | os.W_OK):
            return f"{side.name} beside it cannot be written"
    return None


def check_study(path: Path, *, writable: bool) -> None:
    """Raise a one-line `LexsemError` where the study at `path` cannot be used: a study to
    serve (`writable`) must take writes; every study must pass SQLite's quick check."""
    if not path.is_file():
        raise LexsemError(f"{path}: no such study (make one with `lexsem annotate create`)")
    why = _not_writable(path)
    if writable and why is not None:
        raise LexsemError(
            f"{path}: cannot be served: {why}, so no answer could be saved; "
            "make it writable or copy it to a writable folder"
        )
    try:
        con = store.connect(path)
    except LexsemError:
        if why is not None:  # SQLite needs its -shm file even to read a study in WAL mode
            raise LexsemError(
                f"{path}: cannot be opened: {why}; copy it to a writable folder"
            ) from None
        raise
    try:
        problem = store.integrity_problem(con)
    finally:
        con.close()
    if problem is not None:
        raise LexsemError(
            f"{path}: the study file is damaged (SQLite's integrity check: {problem}); "
            "restore it from a copy"
        )


def loose_mode(path: Path) -> str | None:
    """A note where others than its owner may read or write the study file, else None."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return (
            f"{path} is mode {mode:04o}: it holds the study's secret, so only its owner should "
            f"read it (chmod 600 {path})"
        )
    return None

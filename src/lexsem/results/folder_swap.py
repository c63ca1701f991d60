"""A run folder on disk, as a unit: checked before any work, written beside it, swapped in whole.

Beside a run folder OUT, in its parent, lexsem makes (and removes) only:

    .OUT.lexsem-new-XXXX   the next run, written in full here, then swapped in for OUT
    .OUT.lexsem-old-XXXX   the previous run, only between the two renames of the fallback swap
                           (file systems that cannot exchange two folders atomically)

Writers hold an exclusive lock on the parent folder (`flock`, no lock file) while they tidy,
check and swap, so every such entry found under the lock is a leftover of a killed write: the
next write (or check) removes it, putting a lone `.lexsem-old-` folder back first when OUT is
missing. Readers never write: where OUT is missing they read that previous run (`located`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from lexsem.atomic import fsync_dir, replace_dir
from lexsem.errors import LexsemError
from lexsem.jsonl import read_json

RUN_JSON = "run.json"
ITEMS_PARQUET = "items.parquet"
RUN_FILES = (RUN_JSON, ITEMS_PARQUET)
NEW, OLD = "new", "old"
MIN_FREE = 8 << 20  # bytes a disk must have free for a run to be started on it
_PROBE = 64 << 10  # bytes written (and removed) to check the folder can be written
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
_READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}


def _target(folder: str | Path) -> Path:
    folder = Path(folder)
    return folder.resolve() if folder.is_symlink() else folder


def _prefix(folder: Path, kind: str) -> str:
    return f".{folder.name}.lexsem-{kind}-"


def siblings(folder: Path, kind: str) -> list[Path]:
    """The `.OUT.lexsem-<kind>-*` entries beside `folder`, oldest first."""
    prefix = _prefix(folder, kind)
    try:
        found = [p for p in folder.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return []
    return sorted(found, key=_mtime)


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # removed meanwhile (a reader does not hold the lock)
        return 0


def _fresh_dir(folder: Path, kind: str) -> Path:
    """Create an empty sibling folder of `folder` (mode 0777 less the umask)."""
    while True:
        path = folder.parent / f"{_prefix(folder, kind)}{secrets.token_hex(6)}"
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        return path


def located(folder: str | Path) -> Path:
    """Where to read the run of `folder`: itself, or the previous run a killed swap left aside."""
    folder = _target(folder)
    if folder.exists():
        return folder
    backups = siblings(folder, OLD)
    return backups[-1] if backups else folder


@contextlib.contextmanager
def locked(parent: Path) -> Iterator[None]:
    """Exclusive lock of the writers of run folders in `parent` (none where flock is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(parent, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):  # a file system without flock: go on unlocked
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def tidy(folder: Path) -> None:
    """Undo what a killed write left beside `folder` (call under `locked`)."""
    backups = siblings(folder, OLD)
    if backups and not folder.exists():
        os.rename(backups.pop(), folder)  # killed between the two renames: the old run is back
        fsync_dir(folder.parent)
    for path in siblings(folder, NEW) + backups:
        shutil.rmtree(path, ignore_errors=True)


def _describe(folder: Path) -> str:
    try:
        raw = read_json(folder / RUN_JSON)
        return f"run {raw['run_id']} of {raw['model']['spec']!r}, {raw['created_at']}"
    except (LexsemError, KeyError, TypeError):
        return "a run"


def _ours(name: str) -> bool:
    """A run file, or a temporary file an earlier lexsem left while writing one."""
    return name in RUN_FILES or any(
        name.startswith(f".{f}.") and name.endswith(".part") for f in RUN_FILES
    )


def _enclosing_run(folder: Path) -> Path | None:
    """The run folder `folder` lies inside (a parent holding run.json), if any."""
    for parent in Path(os.path.realpath(folder)).parents:  # `..` and links resolved
        if (parent / RUN_JSON).is_file():
            return parent
    return None


def refuse_nested(folder: Path) -> None:
    """Refuse a `folder` inside a run folder (a run there would be lost with it)."""
    outer = _enclosing_run(folder)
    if outer is not None:
        raise LexsemError(
            f"{folder} lies inside the run folder {outer} ({_describe(outer)}): a run folder is "
            "replaced as a whole, so a run written inside it would be lost with it; choose an "
            "--out outside it"
        )


def check_target(folder: Path, *, force: bool) -> None:
    """Refuse a `folder` that is a file, lies inside a run folder, holds other files, holds a
    run (unless `force`), or is read-only."""
    refuse_nested(folder)
    if folder.exists() and not folder.is_dir():
        raise LexsemError(f"{folder} is a file, not a folder: --out needs a folder for the run")
    if not folder.is_dir():
        return
    names = sorted(os.listdir(folder))
    others = [n for n in names if not _ours(n)]
    if others:
        raise LexsemError(
            f"{folder} holds files that are not a lexsem run ({', '.join(others[:5])}); a run "
            "folder is replaced as a whole, so lexsem writes runs only into a new or empty "
            "folder, or one holding a run (with --force)"
        )
    if any(n in RUN_FILES for n in names) and not force:
        raise LexsemError(
            f"{folder} already holds {_describe(folder)}; pass --force (force=True) to replace "
            "it, or choose another --out"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise LexsemError(f"{folder} is read-only: a run cannot be written there")


def _why(exc: OSError) -> str:
    if exc.errno in _NO_SPACE:
        return "no space left on its disk"
    if exc.errno in _READ_ONLY:
        return "its folder is read-only"
    return exc.strerror or str(exc)


def _probe(folder: Path) -> None:
    """Write (and remove) a small file beside `folder`: read-only or full disks fail now."""
    free = shutil.disk_usage(folder.parent).free
    if free < MIN_FREE:
        raise LexsemError(
            f"cannot write the run folder {folder}: only {free} bytes free on its disk "
            f"(lexsem wants {MIN_FREE} before it starts); free some space or choose another --out"
        )
    tmp = None
    try:
        tmp = _fresh_dir(folder, NEW)
        with open(tmp / "probe", "wb") as fh:
            fh.write(bytes(_PROBE))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise LexsemError(f"cannot write the run folder {folder}: {_why(exc)}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _make_parent(folder: Path) -> None:
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LexsemError(
            f"cannot create the folder {folder.parent} for the run {folder.name}: {_why(exc)}"
        ) from None


def check_out_dir(folder: str | Path, *, force: bool = False) -> None:
    """Before any work: can a run be written to `folder`? (See `check_target`; also a read-only
    parent and a full disk.) Tidies what a killed write left beside it."""
    folder = _target(folder)
    refuse_nested(folder)  # before any parent folder is made
    _make_parent(folder)
    with locked(folder.parent):
        tidy(folder)
        check_target(folder, force=force)
        _probe(folder)


def _fsync_tree(folder: Path) -> None:
    for path in folder.iterdir():
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
    fsync_dir(folder)


@contextlib.contextmanager
def writing(folder: str | Path, *, force: bool = False) -> Iterator[Path]:
    """Yield an empty folder beside `folder` to write a run into; when the block succeeds it
    replaces `folder` whole (see `lexsem.atomic.replace_dir`); when it fails, `folder` is left
    as it was and nothing is left beside it."""
    folder = _target(folder)
    _make_parent(folder)
    with locked(folder.parent):
        tidy(folder)
        check_target(folder, force=force)
        tmp = _fresh_dir(folder, NEW)
        try:
            yield tmp
            _fsync_tree(tmp)
            replace_dir(tmp, folder, folder.parent / f"{_prefix(folder, OLD)}{tmp.name[-12:]}")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

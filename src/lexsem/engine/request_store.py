"""The request store: what a model computed, content-addressed, one SQLite database per model.

A value is stored under the key of *what was asked* (`lexsem.engine.keys`: a sha256 of the
request's kind and content — the text, the image bytes' key, the prompt, the generation
parameters) in the database of *who answered* (the model's fingerprint key names the file).
Three kinds of value, one table each:

- **vectors**: float32 arrays (text and image embeddings), keyed by `content_key`;
- **scalars**: float64 numbers (pair scores, blind text scores, log-prob summaries);
- **records**: JSON documents (generated text, per-token log-probs, raw API responses).

The same key always maps to the same value, so writes are ``INSERT OR IGNORE`` and the first
writer wins. Several processes may read and write one store at the same time: the database
runs in WAL mode with a long busy timeout, every ``put_*`` call is one ``BEGIN IMMEDIATE``
transaction (an interrupted run leaves only complete, committed rows and the next run resumes
from them), and opening/initialising/upgrading/quarantining is serialised by a lock file
beside the database.

Damage is detected rather than trusted: every row carries its length and an 8-byte blake2b
digest of its bytes; a row that does not match (or does not decode) is a miss, deleted with a
warning naming the file. A file that is not SQLite at all is moved aside to
``<name>.corrupt-<timestamp>`` and a fresh store is started (read-only raises `CacheError`).

Schema 1 (vectors only) files still open: read-only they serve their vectors as they are;
opened for writing they gain the scalar and record tables and become schema 2.

A store that cannot be written (a read-only folder, file or file system: the lock file, the
folder or the database refuses writes) is opened read-only instead, with a warning: it serves
what it holds and stores nothing new (``put_*`` are no-ops), so a fully cached run still runs.
A store deleted or replaced while open (``rm -rf ~/.cache/lexsem`` during a run, or another
process moving a damaged file aside) is noticed at the next write: a warning, and a fresh store
is started at the same path (rows written to a deleted file would be lost without a word).

Stores of one model made elsewhere (a sweep's workers, each with a store of its own) are
merged into one (`RequestStore.merge`, `merge_store`): a union, in one transaction per file.
Floats of one key that agree to fp32 rounding (`MERGE_RTOL`: another CPU's kernels) are the
same value, the store's own kept; any other difference under one key is a `StoreConflict`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shlex
import sqlite3
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import numpy as np
from filelock import FileLock
from filelock import Timeout as LockTimeout

from lexsem.clock import span
from lexsem.errors import CacheError

__all__ = [
    "MERGE_RTOL",
    "SCHEMA_VERSION",
    "MergeStats",
    "RequestStore",
    "StoreConflict",
    "ValueKind",
    "merge_store",
    "merge_stores",
    "remove_store",
    "store_files",
    "store_keys",
    "store_rows",
    "store_snapshot",
]

SCHEMA_VERSION = 2  # 1: vectors only; 2: + scalars, records
BUSY_TIMEOUT_S = 60.0  # how long a connection waits for another process's write lock
LOCK_TIMEOUT_S = 120.0  # how long opening waits for another process to finish opening
CHUNK_PARAMS = 900  # bound parameters per SELECT (SQLite's historic limit is 999)
DIGEST_SIZE = 8
# Two float values of one key are the same value when they agree to fp32 rounding: a vector when
# ||a - b|| <= MERGE_RTOL * ||b||, a scalar when |a - b| <= MERGE_RTOL * max(|b|, 1) (b: the
# value kept). Processes on other CPUs or kernels round the last bits differently (1e-7 to 1e-6
# of a value's size); about 80 fp32 ulps, far below what any real difference moves (1e-3).
MERGE_RTOL = 1e-5

ValueKind = Literal["vectors", "scalars", "records"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_READ_ONLY_SQLITE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")
_MODEL_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_F32 = np.dtype("<f4")


def _vector(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=_F32).astype(np.float32)


def _scalar(data: bytes) -> float:
    return float(struct.unpack("<d", data)[0])


def _record(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


@dataclass(frozen=True)
class _Table:
    """One kind of value: ``<name>(key, <size>, <data>, digest)``, ``len(data) == size * unit``."""

    name: str
    size: str
    data: str
    unit: int
    decode: Callable[[bytes], Any]

    def create(self) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} (key TEXT PRIMARY KEY, "
            f"{self.size} INTEGER NOT NULL, {self.data} BLOB NOT NULL, digest BLOB NOT NULL)"
        )


_TABLES: dict[str, _Table] = {
    "vectors": _Table("vectors", "dim", "vec", 4, _vector),  # schema 1's table, unchanged
    "scalars": _Table("scalars", "n", "value", 8, _scalar),
    "records": _Table("records", "nbytes", "doc", 1, _record),
}
_META = "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
_BAD = object()


def _digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=DIGEST_SIZE).digest()


class _CannotWrite(Exception):
    """Opening for writing failed because the place refuses writes (read-only)."""


def _refuses_writes(exc: BaseException) -> bool:
    """True for errors of a read-only folder, file or file system (not for damage or busy)."""
    if isinstance(exc, OSError):
        return exc.errno in _READ_ONLY_ERRNOS
    if isinstance(exc, sqlite3.OperationalError):
        name = getattr(exc, "sqlite_errorname", "") or ""  # Python >= 3.11
        text = str(exc).lower()
        return name.startswith(_READ_ONLY_SQLITE) or any(
            m in text for m in ("readonly database", "unable to open database file")
        )
    return False


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _is_corruption(exc: sqlite3.Error) -> bool:
    """True for "not a database"/"malformed" errors, False for busy/locked/IO-style errors."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


def _decoded(table: _Table, size: object, data: object, digest: object) -> Any:
    """The value of a row, or `_BAD` when its bytes fail their length, digest or decoding."""
    if not (
        isinstance(data, bytes)
        and isinstance(size, int)
        and len(data) == size * table.unit
        and digest == _digest(data)
    ):
        return _BAD
    try:
        return table.decode(data)
    except (ValueError, struct.error):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return _BAD


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on any exception)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


class StoreConflict(CacheError):
    """Two stores of one model hold different values under one key: beyond `MERGE_RTOL`, of
    another size, or records that are not byte for byte the same."""

    def __init__(self, message: str, *, src: Path, dest: Path, table: str, key: str) -> None:
        super().__init__(message)
        self.src, self.dest, self.table, self.key = src, dest, table, key


@dataclass
class MergeStats:
    """What merging did: store files merged, rows added, rows the store already held (the same
    bytes), rows it held within `MERGE_RTOL` (its value kept) and the largest relative deviation
    among those, rows left out because their bytes failed their digest."""

    files: int = 0
    added: int = 0
    present: int = 0
    close: int = 0
    max_deviation: float = 0.0
    damaged: int = 0
    keys: list[str] = field(default_factory=list)  # the model keys merged

    def __iadd__(self, other: MergeStats) -> MergeStats:
        self.files += other.files
        self.added += other.added
        self.present += other.present
        self.close += other.close
        self.max_deviation = max(self.max_deviation, other.max_deviation)
        self.damaged += other.damaged
        self.keys += [k for k in other.keys if k not in self.keys]
        return self


def _deviation(table: _Table, got: Any, kept: Any) -> float:
    """How far `got` is from `kept` relative to `kept`'s size (docs/testing.md's rule: a
    vector's norm, a scalar's max(|value|, 1)); inf where they cannot be the same value. Only
    called for rows whose bytes differ."""
    if table.name == "records":  # a record is the same only byte for byte
        return float("inf")
    a = np.asarray(got, dtype=np.float64).ravel()
    b = np.asarray(kept, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    if np.array_equal(a, b, equal_nan=True):
        return 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        if table.name == "vectors":
            scale = float(np.linalg.norm(b))
            error = float(np.linalg.norm(a - b))
            out = error / scale if scale > 0 else float("inf")
        else:
            out = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0)))
    return out if np.isfinite(out) else float("inf")


class RequestStore:
    """Vectors, scalars and records keyed by request, in ``root/embeddings/<model_key>.sqlite``.

    Use as a context manager or call `close`. One instance may be shared between threads; any
    number of processes may open the same store concurrently.

    Args:
        root: the cache root (see `lexsem.paths.cache_dir`).
        model_key: the model's fingerprint key (`lexsem.models.protocols.fingerprint_key`);
            it names the database file and is recorded inside it.
        readonly: open without writing anything; ``put_*`` raise `CacheError`. A missing
            database reads as an empty store; a damaged one raises `CacheError`.

    Opened for writing where writing is refused, the store is read-only with a warning and
    ``writable`` False: ``put_*`` store nothing.
    """

    path: Path
    model_key: str
    readonly: bool
    writable: bool  # False: read-only, asked for (`readonly`) or because writes are refused

    def __init__(self, root: Path, model_key: str, *, readonly: bool = False) -> None:
        if not _MODEL_KEY_RE.match(model_key):
            raise CacheError(
                f"invalid model key {model_key!r}: expected letters, digits, '.', '_' or '-'"
            )
        self.model_key = model_key
        self.readonly = readonly
        self.path = Path(root).expanduser() / "embeddings" / f"{model_key}.sqlite"
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._tables: frozenset[str] = frozenset()  # value tables present in the file
        self._closed = False
        self._select_sql: dict[tuple[str, int], str] = {}
        self.writable = not readonly
        self._file: tuple[int, int] | None = None  # the file written to (device, inode)
        with span("store"):
            self._conn = self._open_readonly() if readonly else self._open_for_writing()

    def _open_for_writing(self) -> sqlite3.Connection | None:
        """Open for writing; where writes are refused, read-only with a warning."""
        try:
            conn = self._open_writable()
        except _CannotWrite as exc:
            self.writable = False
            warnings.warn(
                f"request store {self.path} cannot be written ({exc.__cause__ or exc}): cached "
                "values are served, new ones are not stored",
                RuntimeWarning,
                stacklevel=4,
            )
            return self._open_readonly()
        self._file = _file_id(self.path)
        return conn

    # ------------------------------------------------------------------ opening

    def _connect(self, *, readonly: bool, immutable: bool = False) -> sqlite3.Connection:
        if readonly:
            flags = "mode=ro&immutable=1" if immutable else "mode=ro"
            target, uri = f"file:{quote(str(self.path.resolve()))}?{flags}", True
        else:
            target, uri = str(self.path), False
        conn = sqlite3.connect(
            target,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,  # autocommit; transactions are explicit
            check_same_thread=False,  # guarded by self._lock
            uri=uri,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return conn

    def _header_ok(self) -> bool:
        """False when the file exists, is non-empty and does not start with the SQLite magic."""
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(_SQLITE_HEADER))
        except FileNotFoundError:
            return True
        except OSError as exc:
            raise CacheError(f"cannot read the request store {self.path}: {exc}") from exc
        return head == b"" or head == _SQLITE_HEADER

    def _open_writable(self) -> sqlite3.Connection:
        """Open (create, upgrade) for writing under the lock file; `_CannotWrite` when the
        folder, the lock file or the database refuses writes."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if _refuses_writes(exc):
                raise _CannotWrite(f"cannot create {self.path.parent}") from exc
            raise CacheError(f"cannot create the cache folder {self.path.parent}: {exc}") from exc
        lock = FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)
        try:
            return self._open_locked(lock)
        except (OSError, sqlite3.OperationalError) as exc:
            if _refuses_writes(exc):
                raise _CannotWrite(str(exc)) from exc
            raise
        except CacheError as exc:
            if exc.__cause__ is not None and _refuses_writes(exc.__cause__):
                raise _CannotWrite(str(exc.__cause__)) from exc.__cause__
            raise

    def _open_locked(self, lock: FileLock) -> sqlite3.Connection:
        try:
            with lock:
                if not self._header_ok():
                    self._quarantine("it is not an SQLite database")
                try:
                    return self._init_db()
                except sqlite3.Error as exc:
                    if not _is_corruption(exc):
                        raise CacheError(
                            f"cannot open the request store {self.path}: {exc}"
                        ) from exc
                    self._quarantine(f"SQLite reports: {exc}")
                try:
                    return self._init_db()
                except sqlite3.Error as exc:
                    raise CacheError(
                        f"cannot create a fresh request store at {self.path}: {exc}"
                    ) from exc
        except LockTimeout as exc:
            raise CacheError(
                f"timed out after {LOCK_TIMEOUT_S:.0f} s waiting for the lock {lock.lock_file}"
            ) from exc

    def _init_db(self) -> sqlite3.Connection:
        """Open for writing; create the tables, or upgrade a schema-1 file (under the lock)."""
        conn = self._connect(readonly=False)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                warnings.warn(
                    f"request store {self.path}: WAL mode unavailable (journal_mode={mode}); "
                    "concurrent use may be slower",
                    RuntimeWarning,
                    stacklevel=4,
                )
            conn.execute("PRAGMA synchronous = NORMAL")
            with _transaction(conn):
                conn.execute(_META)
                meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
                version = self._check_meta(meta) if meta else 0
                for table in _TABLES.values():
                    conn.execute(table.create())
                if version < SCHEMA_VERSION:  # a fresh file, or a schema-1 file upgraded
                    conn.executemany(
                        "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)",
                        [("model_key", self.model_key), ("schema_version", str(SCHEMA_VERSION))],
                    )
        except BaseException:
            conn.close()
            raise
        self._tables = frozenset(_TABLES)
        return conn

    def _open_readonly(self) -> sqlite3.Connection | None:
        """Open without writing. A WAL-mode file in a place that refuses writes (its `-shm`
        cannot be created) is opened as immutable: nothing can be writing it there."""
        if not self.path.exists():
            return None
        if not self._header_ok():
            raise CacheError(f"the request store {self.path} is not an SQLite database")
        try:
            return self._read_schema(immutable=False)
        except CacheError as exc:
            if not (isinstance(exc.__cause__, sqlite3.Error) and _refuses_writes(exc.__cause__)):
                raise
        return self._read_schema(immutable=True)

    def _read_schema(self, *, immutable: bool) -> sqlite3.Connection | None:
        try:
            conn = self._connect(readonly=True, immutable=immutable)
        except sqlite3.Error as exc:
            raise CacheError(f"cannot open the request store {self.path}: {exc}") from exc
        try:
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            meta = dict(conn.execute("SELECT name, value FROM meta")) if "meta" in tables else {}
            if not meta:
                conn.close()
                return None  # created but never initialised: nothing stored yet
            self._check_meta(meta)
        except sqlite3.Error as exc:
            conn.close()
            what = "is damaged" if _is_corruption(exc) else "cannot be read"
            raise CacheError(f"the request store {self.path} {what}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        self._tables = frozenset(tables & set(_TABLES))
        return conn

    def _check_meta(self, meta: dict[str, str]) -> int:
        """The file's schema version, after checking it is this model's and readable."""
        stored_key = meta.get("model_key")
        if stored_key != self.model_key:
            raise CacheError(
                f"the request store {self.path} belongs to model key {stored_key!r}, "
                f"not {self.model_key!r}"
            )
        version = meta.get("schema_version")
        if version not in {str(v) for v in range(1, SCHEMA_VERSION + 1)}:
            raise CacheError(
                f"the request store {self.path} has schema version {version!r}; this lexsem "
                f"reads versions 1 to {SCHEMA_VERSION} (delete the file to rebuild it)"
            )
        return int(version)

    def _quarantine(self, why: str) -> None:
        """Move a damaged database (and its WAL) aside to ``<name>.corrupt-<timestamp>``."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while dest.exists():
            dest = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        try:
            self.path.replace(dest)
            for suffix in ("-wal", "-journal"):
                side = Path(str(self.path) + suffix)
                if side.exists():
                    side.replace(Path(str(dest) + suffix))
            with contextlib.suppress(FileNotFoundError):
                Path(str(self.path) + "-shm").unlink()
        except OSError as exc:
            raise CacheError(
                f"the request store {self.path} is damaged ({why}) and could not be moved "
                f"aside: {exc}"
            ) from exc
        warnings.warn(
            f"request store {self.path} is damaged ({why}); moved it to {dest} and started "
            "a fresh store",
            RuntimeWarning,
            stacklevel=4,
        )

    # ------------------------------------------------------------------ reading

    def get_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors among `keys` (hits only), as float32 1-D arrays."""
        with span("store"):
            return self._get(_TABLES["vectors"], keys)

    def get_scalars(self, keys: Sequence[str]) -> dict[str, float]:
        """The stored scalars among `keys` (hits only), as Python floats (float64)."""
        with span("store"):
            return self._get(_TABLES["scalars"], keys)

    def get_records(self, keys: Sequence[str]) -> dict[str, Any]:
        """The stored records among `keys` (hits only), as decoded JSON values."""
        with span("store"):
            return self._get(_TABLES["records"], keys)

    def count(self, kind: ValueKind | None = None) -> int:
        """The number of stored values of `kind` (all kinds when None)."""
        if kind is not None and kind not in _TABLES:
            raise ValueError(f"unknown value kind {kind!r}; expected one of {sorted(_TABLES)}")
        with self._lock:
            conn = self._require_open()
            names = [n for n in ([kind] if kind else _TABLES) if n in self._tables]
            if conn is None:
                return 0
            try:
                return sum(
                    int(conn.execute(f"SELECT COUNT(*) FROM {n}").fetchone()[0]) for n in names
                )
            except sqlite3.Error as exc:
                raise self._error("read from", exc) from exc

    def __len__(self) -> int:
        """The number of stored values, all kinds together."""
        return self.count()

    def _require_open(self) -> sqlite3.Connection | None:
        if self._closed:
            raise CacheError(f"the request store {self.path} is closed")
        return self._conn

    def _select(self, table: _Table, n: int) -> str:
        sql = self._select_sql.get((table.name, n))
        if sql is None:
            marks = ",".join("?" * n)
            sql = (
                f"SELECT key, {table.size}, {table.data}, digest FROM {table.name} "
                f"WHERE key IN ({marks})"
            )
            self._select_sql[(table.name, n)] = sql
        return sql

    def _get(self, table: _Table, keys: Sequence[str]) -> dict[str, Any]:
        """Decoded hits among `keys`; damaged rows are misses, deleted (unless read-only) with
        a `RuntimeWarning` naming the file."""
        with self._lock:
            conn = self._require_open()
            if conn is None or not keys or table.name not in self._tables:
                return {}
            unique = list(dict.fromkeys(keys))
            found: dict[str, Any] = {}
            bad: list[tuple[Any, ...]] = []
            try:
                for start in range(0, len(unique), CHUNK_PARAMS):
                    chunk = unique[start : start + CHUNK_PARAMS]
                    for row in conn.execute(self._select(table, len(chunk)), chunk):
                        value = _decoded(table, *row[1:])
                        if value is _BAD:
                            bad.append(tuple(row))
                        else:
                            found[row[0]] = value
            except sqlite3.Error as exc:
                raise self._error("read from", exc) from exc
            if bad:
                self._drop_bad(conn, table, bad)
            return found

    def _drop_bad(
        self, conn: sqlite3.Connection, table: _Table, bad: list[tuple[Any, ...]]
    ) -> None:
        shown = ", ".join(str(k)[:12] for k, *_ in bad[:3]) + (", ..." if len(bad) > 3 else "")
        action = "deleted them; they will be recomputed" if self.writable else "ignored them"
        warnings.warn(
            f"request store {self.path}: {len(bad)} corrupt {table.name} row(s) ({shown}) "
            f"failed their checksum, length or decoding check; {action}",
            RuntimeWarning,
            stacklevel=4,
        )
        if not self.writable:
            return
        # Delete only the exact bad row: another process may already have replaced it.
        self._execute_many(
            conn,
            f"DELETE FROM {table.name} WHERE key = ? AND {table.size} IS ? "
            f"AND {table.data} IS ? AND digest IS ?",
            bad,
            "repair",
        )

    def _execute_many(
        self, conn: sqlite3.Connection, sql: str, rows: Sequence[tuple[Any, ...]], what: str
    ) -> None:
        """`sql` for each of `rows` in one transaction; an SQLite error is `_error(what)`."""
        try:
            with _transaction(conn):
                conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise self._error(what, exc) from exc

    # ------------------------------------------------------------------ writing

    def put_vectors(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store `vectors` (shape ``(len(keys), d)``, floating point, kept as float32)."""
        self._writable()
        arr = np.asarray(vectors)
        if arr.ndim != 2 or arr.shape[0] != len(keys):
            raise ValueError(
                f"vectors must have shape ({len(keys)}, d) to match the keys, got {arr.shape}"
            )
        if not np.issubdtype(arr.dtype, np.floating):
            raise ValueError(f"vectors must be floating point, got dtype {arr.dtype}")
        arr = np.ascontiguousarray(arr, dtype=_F32)
        with span("store"):
            rows = [(int(arr.shape[1]), row.tobytes()) for row in arr]
            self._put(_TABLES["vectors"], keys, rows)

    def put_scalars(self, keys: Sequence[str], values: Sequence[float] | np.ndarray) -> None:
        """Store `values` (one real number per key, kept as float64; NaN and inf included)."""
        self._writable()
        arr = np.asarray(values)
        if arr.ndim != 1 or arr.shape[0] != len(keys):
            raise ValueError(
                f"values must have shape ({len(keys)},) to match the keys, got {arr.shape}"
            )
        if arr.dtype.kind not in "fiu":
            raise ValueError(f"values must be real numbers, got dtype {arr.dtype}")
        rows = [(1, struct.pack("<d", v)) for v in arr.astype(np.float64).tolist()]
        with span("store"):
            self._put(_TABLES["scalars"], keys, rows)

    def put_records(
        self, keys: Sequence[str], docs: Sequence[Any], *, replace: bool = False
    ) -> None:
        """Store `docs` (one JSON value per key: dicts, lists, strings, numbers, bools, None;
        NaN and ±inf round-trip as Python's json writes them). A key already stored keeps its
        first value unless `replace` (asked for by the user: `lexsem ask --import --force`)."""
        self._writable()
        if len(docs) != len(keys):
            raise ValueError(f"got {len(docs)} records for {len(keys)} keys")
        rows = []
        for key, doc in zip(keys, docs, strict=True):
            try:
                blob = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            except (TypeError, ValueError) as exc:
                raise ValueError(f"the record for key {str(key)[:12]} is not JSON: {exc}") from exc
            rows.append((len(blob), blob))
        with span("store"):
            self._put(_TABLES["records"], keys, rows, replace=replace)

    def _writable(self) -> sqlite3.Connection | None:
        """The connection to write with; None when writes are refused where the store lies
        (opened read-only with a warning: nothing is stored)."""
        with self._lock:
            conn = self._require_open()
            if self.readonly:
                raise CacheError(f"the request store {self.path} is open read-only")
            return conn if self.writable else None

    def _same_file(self, conn: sqlite3.Connection) -> sqlite3.Connection | None:
        """`conn`, or when the file was deleted or replaced since it was opened, a connection
        to a fresh store at the same path (with a warning; None if that cannot be written)."""
        if _file_id(self.path) == self._file:
            return conn
        warnings.warn(
            f"request store {self.path} was deleted or replaced while in use: what this run "
            "stored in it before is gone; starting a fresh store there",
            RuntimeWarning,
            stacklevel=5,
        )
        self._conn = None
        conn.close()
        self._conn = self._open_for_writing()
        return self._conn if self.writable else None

    def _put(
        self,
        table: _Table,
        keys: Sequence[str],
        rows: list[tuple[int, bytes]],
        *,
        replace: bool = False,
    ) -> None:
        """Insert ``(key, size, data, digest)`` rows in one transaction (first writer wins,
        unless `replace`)."""
        params = []
        for key, (size, blob) in zip(keys, rows, strict=True):
            if not isinstance(key, str):
                raise TypeError(f"store keys must be str, not {type(key).__name__}")
            params.append((key, size, blob, _digest(blob)))
        if not params:
            return
        with self._lock:
            conn = self._writable()
            conn = self._same_file(conn) if conn is not None else None
            if conn is None:
                return
            self._execute_many(
                conn,
                f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO {table.name} "
                f"(key, {table.size}, {table.data}, digest) VALUES (?, ?, ?, ?)",
                params,
                "write to",
            )

    # ------------------------------------------------------------------ merging

    def merge(self, src: RequestStore) -> MergeStats:
        """Add the rows of `src` (another store of this model: a sweep worker's) that this store
        lacks, in one transaction: a merge interrupted leaves this store as it was or merged
        whole, and merges in several processes at once are safe (SQLite's lock).

        The same key with the same bytes is `present`; with floats within `MERGE_RTOL` of this
        store's it is `close` and this store's value is kept (the largest deviation is in the
        stats). Anything else under one key (beyond the tolerance, another size, a record that
        differs) is a `StoreConflict` naming both files and the key, and nothing of `src` is
        merged. A row of `src` whose bytes fail their digest is left out (`damaged`); a
        damaged row of this store under a key `src` holds soundly is replaced."""
        if src.model_key != self.model_key:
            raise CacheError(
                f"cannot merge {src.path} into {self.path}: the stores are of other models"
            )
        stats = MergeStats(files=1, keys=[self.model_key])
        with self._lock, src._lock:
            conn = self._writable()
            conn = self._same_file(conn) if conn is not None else None
            if conn is None:
                raise CacheError(f"cannot merge into the request store {self.path}: read-only")
            source = src._require_open()
            if source is None:
                return stats  # no file, or never initialised: nothing stored
            try:
                with _transaction(conn):
                    for table in _TABLES.values():
                        if table.name in src._tables:
                            self._merge_table(conn, source, table, src.path, stats)
            except sqlite3.Error as exc:
                hint = " (a file is damaged)" if _is_corruption(exc) else ""
                raise CacheError(f"cannot merge {src.path} into {self.path}: {exc}{hint}") from exc
        return stats

    def _merge_table(
        self,
        conn: sqlite3.Connection,
        source: sqlite3.Connection,
        table: _Table,
        src_path: Path,
        stats: MergeStats,
    ) -> None:
        """Merge one value table of `source`, `CHUNK_PARAMS` keys at a time (in a transaction
        of `conn`)."""
        rows = source.execute(
            f"SELECT key, {table.size}, {table.data}, digest FROM {table.name} ORDER BY key"
        )
        insert = (
            f"INSERT OR REPLACE INTO {table.name} (key, {table.size}, {table.data}, digest) "
            "VALUES (?, ?, ?, ?)"
        )
        while chunk := rows.fetchmany(CHUNK_PARAMS):
            keys = [row[0] for row in chunk]
            held = {row[0]: row for row in conn.execute(self._select(table, len(keys)), keys)}
            new = []
            for row in chunk:
                key, size, data, digest = row
                value = _decoded(table, size, data, digest)
                if value is _BAD:
                    stats.damaged += 1
                    continue
                mine = held.get(key)
                kept = _BAD if mine is None else _decoded(table, *mine[1:])
                if kept is _BAD:  # missing here, or a damaged row giving way to a sound one
                    new.append(row)
                elif mine is not None and mine[1] == size and mine[2] == data:
                    stats.present += 1
                else:
                    deviation = _deviation(table, value, kept)
                    if deviation > MERGE_RTOL:
                        raise self._conflict(src_path, table, key, deviation)
                    stats.close += 1
                    stats.max_deviation = max(stats.max_deviation, deviation)
            conn.executemany(insert, new)
            stats.added += len(new)

    def _conflict(self, src: Path, table: _Table, key: str, deviation: float) -> StoreConflict:
        how = (
            f"relative deviation {deviation:.3g} > {MERGE_RTOL:g}"
            if np.isfinite(deviation)
            else ("another value" if table.name == "records" else "another size or NaN")
        )
        return StoreConflict(
            f"{src}: key {key} ({table.name} of model {self.model_key}) holds another value "
            f"than {self.path} ({how}); nothing of {src.name} was merged. To keep the value of "
            f"{self.path.name} and drop the other file: rm {shlex.quote(str(src))}",
            src=src,
            dest=self.path,
            table=table.name,
            key=key,
        )

    def rows(self) -> dict[tuple[str, str], tuple[int, bytes]]:
        """Every row as stored: (table, key) -> (size, bytes), damaged rows included."""
        with self._lock:
            conn = self._require_open()
            if conn is None:
                return {}
            out: dict[tuple[str, str], tuple[int, bytes]] = {}
            try:
                for table in _TABLES.values():
                    if table.name in self._tables:
                        sql = f"SELECT key, {table.size}, {table.data} FROM {table.name}"
                        for key, size, data in conn.execute(sql):
                            out[(table.name, key)] = (size, bytes(data))
            except sqlite3.Error as exc:
                raise self._error("read from", exc) from exc
            return out

    def snapshot(self) -> bytes:
        """The store as the bytes of one SQLite file, its committed rows only, read through
        SQLite's backup API (nothing written here; what another process commits meanwhile is
        in it or not, never half). Empty bytes where nothing is stored."""
        import tempfile

        with self._lock:
            conn = self._require_open()
            if conn is None:
                return b""
            with tempfile.TemporaryDirectory(prefix="lexsem-snapshot-") as tmp:
                copy = Path(tmp) / self.path.name
                dest = sqlite3.connect(str(copy))
                try:
                    conn.backup(dest)
                    dest.execute("PRAGMA journal_mode = DELETE")
                except sqlite3.Error as exc:
                    raise self._error("copy", exc) from exc
                finally:
                    dest.close()
                return copy.read_bytes()

    # ------------------------------------------------------------------ lifetime

    def _error(self, doing: str, exc: sqlite3.Error) -> CacheError:
        hint = " (the file is damaged; delete it to rebuild it)" if _is_corruption(exc) else ""
        return CacheError(f"cannot {doing} the request store {self.path}: {exc}{hint}")

    def close(self) -> None:
        """Close the database (idempotent). Committed rows stay on disk."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is None:
                return
            gone = self.writable and _file_id(self.path) != self._file
            conn.close()
        if gone:
            warnings.warn(
                f"request store {self.path} was deleted or replaced while in use: what this "
                "run stored in it is gone",
                RuntimeWarning,
                stacklevel=2,
            )

    def __enter__(self) -> RequestStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("rw" if self.writable else "readonly")
        return f"RequestStore({str(self.path)!r}, {state})"


def store_keys(root: str | Path) -> list[str]:
    """The model keys of the stores under the cache root `root` (sorted)."""
    folder = Path(root).expanduser() / "embeddings"
    return sorted(f.name.removesuffix(".sqlite") for f in folder.glob("*.sqlite") if f.is_file())


def store_files(root: str | Path) -> dict[str, bytes]:
    """The store files under the cache root `root` (`<model key>.sqlite` -> its bytes), each
    whole: its WAL checkpointed into it first (for sending a store elsewhere)."""
    out: dict[str, bytes] = {}
    for model_key in store_keys(root):
        path = Path(root).expanduser() / "embeddings" / f"{model_key}.sqlite"
        conn = sqlite3.connect(str(path))
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise CacheError(f"cannot read the request store {path}: {exc}") from exc
        finally:
            conn.close()
        out[path.name] = path.read_bytes()
    return out


def store_snapshot(root: str | Path, model_key: str) -> bytes:
    """The store of `model_key` under the cache root `root` as one file's bytes
    (`RequestStore.snapshot`), read-only; empty bytes where there is none."""
    with RequestStore(Path(root), model_key, readonly=True) as store:
        return store.snapshot()


def remove_store(root: str | Path, model_key: str) -> None:
    """Delete the store of `model_key` under `root`: its file, WAL, shared memory, lock."""
    path = Path(root).expanduser() / "embeddings" / f"{model_key}.sqlite"
    for suffix in ("-wal", "-shm", "", ".lock"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


def merge_store(
    src_root: str | Path, dest_root: str | Path, model_key: str, *, remove: bool = False
) -> MergeStats:
    """Merge the store of `model_key` under the cache root `src_root` into the one under
    `dest_root` (`RequestStore.merge`); with `remove`, the source is deleted once merged. A
    source that cannot be read is a `CacheError` saying how to drop it."""
    try:
        src = RequestStore(Path(src_root), model_key, readonly=True)
    except CacheError as exc:
        path = Path(src_root) / "embeddings" / f"{model_key}.sqlite"
        raise CacheError(
            f"{exc}; nothing of it was merged. To drop it: rm {shlex.quote(str(path))}"
        ) from exc
    with src, RequestStore(Path(dest_root), model_key) as dest:
        stats = dest.merge(src)
    if remove:
        remove_store(src_root, model_key)
    return stats


def merge_stores(src_root: str | Path, dest_root: str | Path) -> MergeStats:
    """Merge every store under the cache root `src_root` into those under `dest_root`, file by
    file (sorted); at the first error the files merged before it stay merged."""
    stats = MergeStats()
    for key in store_keys(src_root):
        stats += merge_store(src_root, dest_root, key)
    return stats


def store_rows(root: str | Path) -> dict[tuple[str, str, str], tuple[int, bytes]]:
    """Every row of every store under the cache root `root`: (model key, table, key) ->
    (size, bytes). Two roots holding the same bytes compare equal."""
    out: dict[tuple[str, str, str], tuple[int, bytes]] = {}
    for model_key in store_keys(root):
        with RequestStore(Path(root), model_key, readonly=True) as store:
            for (table, key), row in store.rows().items():
                out[(model_key, table, key)] = row
    return out

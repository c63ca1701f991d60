"""The study store: one SQLite file per study, in WAL mode, ``synchronous=FULL``.

Tables: ``meta`` (the study's settings as JSON, its secret, the admin and join token hashes),
``images`` (the study's own image bytes by sha256: the only images the server serves),
``units`` (one row per query: kind, item, subset, practice / gold, right answer, payload JSON),
``annotators`` (an opaque id, the token's sha256, the randomisation seed, consent and start
times: nothing personal), ``assignments`` (annotator × unit: serving order, the option order
shown, serve time, answer, edit, seconds, answer time).

Every change is one transaction committed before the response that follows it is sent, so a
killed server (SIGKILL) loses no answer; `write` takes SQLite's write lock at the start
(``BEGIN IMMEDIATE``), so concurrent requests never interleave a read-then-write.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lexsem.errors import LexsemError

__all__ = ["SCHEMA_VERSION", "connect", "create_schema", "get_meta", "read", "set_meta", "write"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE images (sha TEXT PRIMARY KEY, mime TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE units (
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, item_id TEXT NOT NULL, subset TEXT NOT NULL,
  benchmark TEXT NOT NULL, item_key TEXT NOT NULL, practice INTEGER NOT NULL,
  gold INTEGER NOT NULL, correct TEXT, payload TEXT NOT NULL, position INTEGER NOT NULL
);
CREATE INDEX units_item ON units (item_key);
CREATE TABLE annotators (
  id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, seed INTEGER NOT NULL,
  created_at TEXT NOT NULL, consented_at TEXT, started_at TEXT, reserved INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE assignments (
  annotator TEXT NOT NULL REFERENCES annotators (id), unit INTEGER NOT NULL REFERENCES units (id),
  seq INTEGER NOT NULL, options TEXT NOT NULL, served_at REAL, answer TEXT, edit TEXT,
  seconds REAL, answered_at TEXT, PRIMARY KEY (annotator, unit)
);
CREATE INDEX assignments_unit ON assignments (unit);
"""


def connect(path: str | Path, *, create: bool = False) -> sqlite3.Connection:
    """A connection to the study at `path` (autocommit; transactions are explicit)."""
    path = Path(path)
    if not create and not path.is_file():
        raise LexsemError(f"{path}: no such study (make one with `lexsem annotate create`)")
    con = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    con.row_factory = sqlite3.Row
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        con.execute("PRAGMA foreign_keys=ON")
        version = None if create else get_meta(con, "schema_version")
    except sqlite3.DatabaseError as exc:
        con.close()
        raise LexsemError(f"{path}: not a lexsem study ({exc})") from None
    if not create and version != SCHEMA_VERSION:
        con.close()
        raise LexsemError(f"{path}: study schema {version!r}, this lexsem reads {SCHEMA_VERSION}")
    return con


def create_schema(con: sqlite3.Connection) -> None:
    con.executescript(_SCHEMA)
    set_meta(con, "schema_version", SCHEMA_VERSION)


@contextmanager
def write(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction holding the write lock from its start; committed on exit."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


@contextmanager
def read(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One consistent snapshot for several reads."""
    con.execute("BEGIN")
    try:
        yield con
    finally:
        con.execute("COMMIT")


def get_meta(con: sqlite3.Connection, key: str) -> Any:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])


def set_meta(con: sqlite3.Connection, key: str, value: Any) -> None:
    con.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, json.dumps(value)),
    )

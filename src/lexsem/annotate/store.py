"""The study store: one SQLite file per study, in WAL mode, ``synchronous=NORMAL``; the only
module that runs SQL on a study file. Every other module calls the named functions below.

Tables: ``meta`` (the study's settings as JSON, its secret, the admin and join token hashes,
its state, the schema version), ``images`` (the study's own image bytes by sha256: the only
images the server serves), ``units`` (one row per query: kind, item, subset, practice / gold,
right answer, payload JSON), ``annotators`` (an opaque id, the token's sha256, the
randomisation seed, consent and start times, how they came (a personal link or the join link),
when the link expires or was revoked, when they were last active, how many items they took and
when an idle reservation was given back: nothing personal), ``sessions`` (an annotator's one
browser session: the sha256 of its cookie's random id and when it began), ``assignments``
(annotator × unit: serving order, the option order shown, serve time and the page token it was
served with, answer, edit, seconds, answer time) and ``schema_history`` (each schema version
the file reached, when, and with which lexsem).

Every change is one transaction committed before the response that follows it is sent, so a
killed server (SIGKILL) loses no answer (a commit is in the write-ahead log, which the
operating system keeps; ``NORMAL`` syncs it to the disk at checkpoints, so only a power cut or
an OS crash can lose the last commits); `write` takes SQLite's write lock at the start
(``BEGIN IMMEDIATE``), so concurrent requests never interleave a read-then-write. Functions
that say "committed on return" are one such transaction; the others run inside the caller's
`write` (or `read`) block.

A study made by an older lexsem is migrated when it is opened: the steps of `MIGRATIONS`
from its version on, all in one write transaction (a failed step leaves the file as it was),
after a copy of the file is kept beside it (``STUDY.schemaN.bak``). A study of a newer schema
than this lexsem's is refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lexsem._version import __version__
from lexsem.atomic import atomic_path
from lexsem.errors import LexsemError

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Annotator",
    "Assignment",
    "Connection",
    "GivenAnswer",
    "Idle",
    "StoredUnit",
    "StudyFileError",
    "Unit",
    "Work",
    "add_annotator",
    "add_assignment",
    "add_image",
    "add_unit",
    "annotator",
    "annotator_by_session",
    "annotator_by_token",
    "annotator_count",
    "annotator_unit",
    "annotator_units",
    "annotators",
    "answer_counts",
    "answers",
    "assignments",
    "checkpoint",
    "clear_released",
    "clock",
    "connect",
    "create_schema",
    "file_path",
    "get_meta",
    "holders",
    "image",
    "integrity_problem",
    "items_held",
    "join_count",
    "main_item_count",
    "mark_reserved",
    "new_session",
    "next_seq",
    "next_unit",
    "now_iso",
    "read",
    "record_answer",
    "record_consent",
    "record_start",
    "release",
    "release_idle",
    "revoke",
    "schema_history",
    "served_unit",
    "set_meta",
    "touch",
    "unit_for_page",
    "units",
    "work",
    "write",
    "write_failure",
]

Connection = sqlite3.Connection

SCHEMA_VERSION = 4  # 1: the study tables; 2: + schema_history; 3: + the crowd columns;
# 4: + sessions

_HISTORY_TABLE = (
    "CREATE TABLE schema_history (version INTEGER PRIMARY KEY, applied_at TEXT, lexsem TEXT)"
)

_SCHEMA = f"""
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
{_HISTORY_TABLE};
"""


# schema 3: how an annotator came, link expiry and revocation, activity, the items they took,
# a reservation given back; the page token each unit was served with
_V3_COLUMNS = (
    "ALTER TABLE annotators ADD COLUMN source TEXT NOT NULL DEFAULT 'link'",
    "ALTER TABLE annotators ADD COLUMN expires_at REAL",
    "ALTER TABLE annotators ADD COLUMN revoked_at TEXT",
    "ALTER TABLE annotators ADD COLUMN last_seen REAL",
    "ALTER TABLE annotators ADD COLUMN target INTEGER",
    "ALTER TABLE annotators ADD COLUMN released_at TEXT",
    "ALTER TABLE assignments ADD COLUMN page TEXT",
)

# schema 4: the participants' browser sessions, one per annotator (`new_session`)
_V4_SESSIONS = (
    "CREATE TABLE sessions (hash TEXT PRIMARY KEY,"
    " annotator TEXT NOT NULL UNIQUE REFERENCES annotators (id), created_at REAL NOT NULL)"
)


def now_iso() -> str:
    """The store's time stamps: ISO 8601, UTC, whole seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def clock() -> float:
    """The study's clock, in seconds since the epoch: when a question was served and answered,
    when a participant was last active, when a link expires (the one clock every module of the
    study asks, so that a test can move it on)."""
    return time.time()


# --- migrations -----------------------------------------------------------------------------


def _to_2(con: Connection) -> None:
    """Schema 2: the schema history, starting with the file's creation (lexsem unknown)."""
    con.execute(_HISTORY_TABLE)
    con.execute(
        "INSERT INTO schema_history (version, applied_at, lexsem) VALUES (1, ?, NULL)",
        (get_meta(con, "created_at"),),
    )


def _to_3(con: Connection) -> None:
    """Schema 3: the crowd columns; an annotator already at work counts as active now (their
    reservation's idle time starts at the upgrade)."""
    for statement in _V3_COLUMNS:
        con.execute(statement)
    con.execute("UPDATE annotators SET last_seen = ? WHERE reserved = 1", (clock(),))


def _to_4(con: Connection) -> None:
    """Schema 4: the participants' browser sessions (none yet: each opens their link again)."""
    con.execute(_V4_SESSIONS)


# (version reached, step): each step takes a study of the version before to this version,
# inside the migration's one write transaction (no COMMIT, no `executescript`).
MIGRATIONS: list[tuple[int, Callable[[Connection], None]]] = [
    (2, _to_2),
    (3, _to_3),
    (4, _to_4),
]


def _migrate(con: Connection, path: Path, version: int) -> None:
    """Bring a study of schema `version` to `SCHEMA_VERSION`, keeping a copy first."""
    backup = path.with_name(f"{path.name}.schema{version}.bak")
    failed = f"{path}: cannot migrate the study from schema {version} to {SCHEMA_VERSION}"
    try:
        with atomic_path(backup) as tmp:
            os.chmod(tmp, 0o600)  # the copy holds the study's secret too
            copy = sqlite3.connect(tmp)
            try:
                con.backup(copy)
            finally:
                copy.close()
    except (OSError, sqlite3.Error) as exc:
        raise LexsemError(f"{failed} (its copy {backup} cannot be written: {exc})") from None
    try:
        with write(con):
            now = get_meta(con, "schema_version")  # another process may have migrated it
            for to, step in MIGRATIONS:
                if now < to:
                    step(con)
                    con.execute(
                        "INSERT INTO schema_history (version, applied_at, lexsem) VALUES (?, ?, ?)",
                        (to, now_iso(), __version__),
                    )
            set_meta(con, "schema_version", SCHEMA_VERSION)
    except Exception as exc:
        raise LexsemError(f"{failed} ({exc}); the file is unchanged") from exc
    warnings.warn(
        f"{path}: study migrated from schema {version} to {SCHEMA_VERSION} "
        f"(the schema-{version} file is kept as {backup})",
        RuntimeWarning,
        stacklevel=3,
    )


# --- the file, transactions, settings -------------------------------------------------------


def connect(path: str | Path, *, create: bool = False) -> Connection:
    """A connection to the study at `path` (autocommit; transactions are explicit); a study of
    an older schema is migrated first."""
    path = Path(path)
    if not create and not path.is_file():
        raise LexsemError(f"{path}: no such study (make one with `lexsem annotate create`)")
    con = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    con.row_factory = sqlite3.Row
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.execute("PRAGMA foreign_keys=ON")
        version = None if create else get_meta(con, "schema_version")
    except sqlite3.DatabaseError as exc:
        con.close()
        raise LexsemError(f"{path}: not a lexsem study ({exc})") from None
    if create:
        return con
    try:
        if type(version) is not int or version < 1:
            raise LexsemError(f"{path}: not a lexsem study (schema version {version!r})")
        if version > SCHEMA_VERSION:
            raise LexsemError(
                f"{path}: study schema {version} is newer than this lexsem's "
                f"({SCHEMA_VERSION}); open it with a newer lexsem"
            )
        if version < SCHEMA_VERSION:
            _migrate(con, path, version)
    except BaseException:
        con.close()
        raise
    return con


def create_schema(con: Connection) -> None:
    """The tables of a new study (an empty file), at this lexsem's schema."""
    con.executescript(_SCHEMA)
    for statement in _V3_COLUMNS:  # the same table text as a migrated study's
        con.execute(statement)
    con.execute(_V4_SESSIONS)
    set_meta(con, "schema_version", SCHEMA_VERSION)
    con.execute(
        "INSERT INTO schema_history (version, applied_at, lexsem) VALUES (?, ?, ?)",
        (SCHEMA_VERSION, now_iso(), __version__),
    )


def checkpoint(con: Connection) -> None:
    """Fold the write-ahead log into the file and empty it (a finished file, one piece)."""
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def file_path(con: Connection) -> str:
    """The path of the study file `con` is open on."""
    (_, _, path) = con.execute("PRAGMA database_list").fetchone()
    return str(path)


#: One writer at a time in this process, in turn: threads queue on this lock instead of on
#: SQLite's busy handler, which polls with sleeps (up to 100 ms) and leaves the file's write
#: lock idle between a commit and the next poll (a launch burst's tail). Other processes still
#: wait on SQLite's lock (`connect`'s timeout).
_WRITER = threading.RLock()
_WRITING: set[int] = set()  # the connections inside a `write` (changed under `_WRITER` only)


@contextmanager
def write(con: Connection) -> Iterator[Connection]:
    """One write transaction holding the write lock from its start; committed on exit. Inside
    another `write` on the same connection it is part of that one (one commit for both)."""
    with _WRITER:
        if id(con) in _WRITING:
            yield con
            return
        con.execute("BEGIN IMMEDIATE")
        _WRITING.add(id(con))
        try:
            yield con
        except BaseException:
            _WRITING.discard(id(con))
            con.execute("ROLLBACK")
            raise
        _WRITING.discard(id(con))
        con.execute("COMMIT")


@contextmanager
def read(con: Connection) -> Iterator[Connection]:
    """One consistent snapshot for several reads."""
    con.execute("BEGIN")
    try:
        yield con
    finally:
        con.execute("COMMIT")


def get_meta(con: Connection, key: str) -> Any:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])


def set_meta(con: Connection, key: str, value: Any) -> None:
    con.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, json.dumps(value)),
    )


def schema_history(con: Connection) -> list[tuple[int, str | None, str | None]]:
    """(version, when it was reached, by which lexsem: None where unknown), oldest first."""
    rows = con.execute("SELECT version, applied_at, lexsem FROM schema_history ORDER BY version")
    return [(r[0], r[1], r[2]) for r in rows]


# --- a study's contents, written at creation ------------------------------------------------


def add_image(con: Connection, sha: str, mime: str, data: bytes) -> None:
    """Store an image's bytes under their sha256 (once)."""
    con.execute(
        "INSERT OR IGNORE INTO images (sha, mime, data) VALUES (?, ?, ?)", (sha, mime, data)
    )


def image(con: Connection, sha: str) -> tuple[str, bytes] | None:
    """(mime type, bytes) of the study's image `sha`, or None."""
    row = con.execute("SELECT mime, data FROM images WHERE sha = ?", (sha,)).fetchone()
    return None if row is None else (row["mime"], row["data"])


def add_unit(
    con: Connection, *, kind: str, item_id: str, subset: str, benchmark: str, item_key: str,
    practice: bool, gold: bool, correct: str | None, payload: dict[str, Any], position: int,
) -> None:  # fmt: skip
    con.execute(
        "INSERT INTO units (kind, item_id, subset, benchmark, item_key, practice, gold,"
        " correct, payload, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (kind, item_id, subset, benchmark, item_key, int(practice), int(gold), correct,
         json.dumps(payload), position),
    )  # fmt: skip


@dataclass(frozen=True)
class StoredUnit:
    """A unit as stored, for reserving work."""

    id: int
    kind: str
    item_key: str
    practice: bool
    gold: bool
    payload: dict[str, Any]
    item_id: str = ""
    subset: str = ""
    benchmark: str = ""
    correct: str | None = None


#: The units of the studies read lately, by (the study's secret, unit count, last unit id): a
#: study's units are written when it is made and never changed, so a reservation (under the
#: write lock) reads them once per server, not hundreds of payloads per participant.
_UNITS: dict[tuple[str, int, int], list[StoredUnit]] = {}
_UNITS_KEPT = 8  # studies


def units(con: Connection) -> list[StoredUnit]:
    """Every unit, in the study's order (practice, gold, main; sampled order within)."""
    count, last = con.execute("SELECT COUNT(*), MAX(id) FROM units").fetchone()
    key = (str(get_meta(con, "secret")), int(count), int(last or 0))
    found = _UNITS.get(key)
    if found is None:
        rows = con.execute(
            "SELECT id, kind, item_key, practice, gold, payload, item_id, subset, benchmark,"
            " correct FROM units ORDER BY position"
        )
        found = [
            StoredUnit(r["id"], r["kind"], r["item_key"], bool(r["practice"]), bool(r["gold"]),
                       json.loads(r["payload"]), r["item_id"], r["subset"], r["benchmark"],
                       r["correct"])
            for r in rows
        ]  # fmt: skip
        while len(_UNITS) >= _UNITS_KEPT:
            _UNITS.pop(next(iter(_UNITS)), None)
        _UNITS[key] = found
    return list(found)


def main_item_count(con: Connection) -> int:
    """The number of main items (neither practice nor gold)."""
    (n,) = con.execute(
        "SELECT COUNT(DISTINCT item_key) FROM units WHERE practice = 0 AND gold = 0"
    ).fetchone()
    return int(n)


# --- annotators -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Annotator:
    id: str
    token_hash: str
    seed: int
    created_at: str
    consented_at: str | None
    started_at: str | None
    reserved: bool
    source: str  # "link" (a personal link made by create / invite) or "join" (the join link)
    expires_at: float | None  # when the link stops working unless started (epoch seconds)
    revoked_at: str | None
    last_seen: float | None  # the last start, first showing of a question or answer
    target: int | None  # the main items taken (a join participant's batches added up)
    released_at: str | None  # when an idle reservation was given back (None: it holds)


_ANNOTATOR_SQL = (
    "SELECT id, token_hash, seed, created_at, consented_at, started_at, reserved, source,"
    " expires_at, revoked_at, last_seen, target, released_at FROM annotators"
)


def _annotator(row: sqlite3.Row) -> Annotator:
    return Annotator(
        row["id"], row["token_hash"], row["seed"], row["created_at"], row["consented_at"],
        row["started_at"], bool(row["reserved"]), row["source"], row["expires_at"],
        row["revoked_at"], row["last_seen"], row["target"], row["released_at"],
    )  # fmt: skip


def annotator(con: Connection, aid: str) -> Annotator | None:
    row = con.execute(f"{_ANNOTATOR_SQL} WHERE id = ?", (aid,)).fetchone()
    return None if row is None else _annotator(row)


def annotator_by_token(con: Connection, token_hash: str) -> Annotator | None:
    """The annotator whose link's token hashes to `token_hash`, or None."""
    row = con.execute(f"{_ANNOTATOR_SQL} WHERE token_hash = ?", (token_hash,)).fetchone()
    return None if row is None else _annotator(row)


def annotator_by_session(con: Connection, session_hash: str, since: float) -> Annotator | None:
    """The annotator whose browser session's id hashes to `session_hash`, where the session
    began at or after `since` (`clock` time), or None."""
    row = con.execute(
        "SELECT a.* FROM sessions s JOIN annotators a ON a.id = s.annotator"
        " WHERE s.hash = ? AND s.created_at >= ?",
        (session_hash, since),
    ).fetchone()
    return None if row is None else _annotator(row)


def new_session(con: Connection, aid: str, session_hash: str) -> None:
    """The annotator's browser session is now the one whose id hashes to `session_hash`,
    begun now; any session they had before has ended (committed on return)."""
    with write(con):
        con.execute("DELETE FROM sessions WHERE annotator = ?", (aid,))
        con.execute(
            "INSERT INTO sessions (hash, annotator, created_at) VALUES (?, ?, ?)",
            (session_hash, aid, clock()),
        )


def annotators(con: Connection) -> list[Annotator]:
    """Every annotator, by id."""
    return [_annotator(r) for r in con.execute(f"{_ANNOTATOR_SQL} ORDER BY id")]


def annotator_count(con: Connection) -> int:
    (n,) = con.execute("SELECT COUNT(*) FROM annotators").fetchone()
    return int(n)


def join_count(con: Connection) -> int:
    """The number of participants who came through the join link."""
    (n,) = con.execute("SELECT COUNT(*) FROM annotators WHERE source = 'join'").fetchone()
    return int(n)


def add_annotator(
    con: Connection, aid: str, token_hash: str, seed: int, *, consented: bool = False,
    source: str = "link", expires_at: float | None = None,
) -> None:  # fmt: skip
    """A new annotator (consented now where `consented`: they came through the crowd link)."""
    now = now_iso()
    con.execute(
        "INSERT INTO annotators (id, token_hash, seed, created_at, consented_at, source,"
        " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (aid, token_hash, seed, now, now if consented else None, source, expires_at),
    )


def record_consent(con: Connection, aid: str) -> None:
    """The annotator's consent, now (once; committed on return)."""
    with write(con):
        con.execute(
            "UPDATE annotators SET consented_at = ? WHERE id = ? AND consented_at IS NULL",
            (now_iso(), aid),
        )


def record_start(con: Connection, aid: str) -> None:
    """The annotator's start, now (once; committed on return)."""
    with write(con):
        con.execute(
            "UPDATE annotators SET started_at = ?, last_seen = ? WHERE id = ?"
            " AND started_at IS NULL",
            (now_iso(), clock(), aid),
        )


def mark_reserved(con: Connection, aid: str, target: int) -> None:
    """The annotator has taken `target` main items (at their first reservation, and each
    further batch a join participant takes)."""
    con.execute(
        "UPDATE annotators SET reserved = 1, target = ?, last_seen = ? WHERE id = ?",
        (target, clock(), aid),
    )


def clear_released(con: Connection, aid: str) -> None:
    """The annotator's reservation holds again (after a top-up)."""
    con.execute(
        "UPDATE annotators SET released_at = NULL, last_seen = ? WHERE id = ?", (clock(), aid)
    )


def touch(con: Connection, aid: str) -> None:
    """The annotator is active now."""
    con.execute("UPDATE annotators SET last_seen = ? WHERE id = ?", (clock(), aid))


_UNANSWERED_MAIN = (
    "DELETE FROM assignments WHERE annotator = ? AND answer IS NULL"
    " AND unit IN (SELECT id FROM units WHERE practice = 0 AND gold = 0)"
)


def release(con: Connection, aid: str) -> int:
    """Give the annotator's unanswered main units back to the pool (inside the caller's
    `write`); the number of units given back."""
    gone = con.execute(_UNANSWERED_MAIN, (aid,)).rowcount
    if gone:
        con.execute("UPDATE annotators SET released_at = ? WHERE id = ?", (now_iso(), aid))
    return int(gone)


@dataclass(frozen=True)
class Idle:
    """Who is idle (times as `clock` gives them): an annotator last active (a question served
    or answered) before `before`, or one who has answered no question and was last active
    before `unanswered_before`."""

    before: float
    unanswered_before: float


def _answered_any(who: str) -> str:
    """SQL: whether the annotator whose id is the column `who` has answered any question
    (practice and gold included)."""
    return (
        f"EXISTS (SELECT 1 FROM assignments x WHERE x.annotator = {who} AND x.answer IS NOT NULL)"
    )


def release_idle(con: Connection, idle: Idle) -> list[str]:
    """Give back the unanswered main units of every idle annotator (inside the caller's
    `write`); the annotators whose units went back."""
    rows = con.execute(
        "SELECT n.id FROM annotators n WHERE n.reserved = 1 AND n.released_at IS NULL"
        f" AND (n.last_seen < ? OR (n.last_seen < ? AND NOT {_answered_any('n.id')}))"
        " ORDER BY n.id",
        (idle.before, idle.unanswered_before),
    ).fetchall()
    return [r[0] for r in rows if release(con, r[0])]


def revoke(con: Connection, aid: str) -> bool:
    """Revoke the annotator's link and give their unanswered main units back (committed on
    return); False where there is no such annotator or the link was already revoked."""
    with write(con):
        done = con.execute(
            "UPDATE annotators SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (now_iso(), aid),
        ).rowcount
        if done:
            release(con, aid)
            con.execute("DELETE FROM sessions WHERE annotator = ?", (aid,))
    return bool(done)


# --- assignments and answers ----------------------------------------------------------------


def holders(con: Connection, idle: Idle | None = None) -> dict[str, int]:
    """Main item key -> the number of annotators holding it: who has every unit of the item
    assigned and has answered them all, or is still at work (link not revoked, and not
    `idle` where given). Counted by SQLite in one query (it runs on every admission check and
    reservation, under the write lock for the latter)."""
    before, unanswered = (None, None) if idle is None else (idle.before, idle.unanswered_before)
    rows = con.execute(
        "WITH sizes AS (SELECT item_key, COUNT(*) AS size FROM units"
        " WHERE practice = 0 AND gold = 0 GROUP BY item_key),"
        " held AS (SELECT u.item_key AS item_key, n.id AS who, COUNT(*) AS n,"
        " COUNT(a.answer) AS done, n.last_seen AS seen, n.revoked_at AS revoked"
        " FROM assignments a JOIN units u ON u.id = a.unit JOIN annotators n"
        " ON n.id = a.annotator WHERE u.practice = 0 AND u.gold = 0"
        " GROUP BY u.item_key, a.annotator)"
        " SELECT h.item_key, COUNT(*) FROM held h JOIN sizes s ON s.item_key = h.item_key"
        " WHERE h.n >= s.size AND (h.done = h.n OR (h.revoked IS NULL AND"
        " (? IS NULL OR (h.seen IS NOT NULL AND h.seen >= ?"
        f" AND (h.seen >= ? OR {_answered_any('h.who')})))))"
        " GROUP BY h.item_key",
        (before, before, unanswered),
    )
    return dict(rows.fetchall())


def items_held(con: Connection) -> dict[str, int]:
    """Main item key -> the number of annotators holding it (`holders`, idle ones included)."""
    return holders(con)


def add_assignment(con: Connection, aid: str, unit_id: int, seq: int, options: list[str]) -> None:
    """Unit `unit_id` for annotator `aid`, served as their `seq`-th, options shown in order
    (nothing where the annotator already has that unit)."""
    con.execute(
        "INSERT OR IGNORE INTO assignments (annotator, unit, seq, options) VALUES (?, ?, ?, ?)",
        (aid, unit_id, seq, json.dumps(options)),
    )


def next_seq(con: Connection, aid: str) -> int:
    """The serving place after the annotator's last unit."""
    (last,) = con.execute("SELECT MAX(seq) FROM assignments WHERE annotator = ?", (aid,)).fetchone()
    return 0 if last is None else int(last) + 1


def answer_counts(con: Connection, aid: str) -> tuple[int, int]:
    """(answered, assigned) units of an annotator."""
    row = con.execute(
        "SELECT COUNT(answer), COUNT(*) FROM assignments WHERE annotator = ?", (aid,)
    ).fetchone()
    return int(row[0]), int(row[1])


@dataclass(frozen=True)
class Work:
    """What an annotator has done: units assigned and unanswered (all kinds), main units
    assigned, answered and skipped, main items they answered whole, gold answered and right."""

    assigned: int
    unanswered: int
    main: int
    main_answered: int
    main_skipped: int
    items_done: int
    gold: int
    gold_right: int


def work(con: Connection, aid: str) -> Work:
    """The annotator's work so far (`Work`)."""
    rows = con.execute(
        "SELECT u.item_key, u.practice, u.gold, u.correct, a.answer FROM assignments a"
        " JOIN units u ON u.id = a.unit WHERE a.annotator = ?",
        (aid,),
    ).fetchall()
    sizes = dict(
        con.execute(
            "SELECT u.item_key, COUNT(*) FROM units u WHERE u.practice = 0 AND u.gold = 0"
            " AND u.item_key IN (SELECT u2.item_key FROM assignments a2 JOIN units u2"
            " ON u2.id = a2.unit WHERE a2.annotator = ?) GROUP BY u.item_key",
            (aid,),
        ).fetchall()
    )
    main = [r for r in rows if not r["practice"] and not r["gold"]]
    answered_per_item: dict[str, int] = {}
    for r in main:
        if r["answer"] is not None:
            answered_per_item[r["item_key"]] = answered_per_item.get(r["item_key"], 0) + 1
    gold = [r for r in rows if r["gold"] and r["answer"] is not None]
    return Work(
        assigned=len(rows),
        unanswered=sum(r["answer"] is None for r in rows),
        main=len(main),
        main_answered=sum(r["answer"] is not None for r in main),
        main_skipped=sum(r["answer"] == "skip" for r in main),
        items_done=sum(n == sizes.get(k) for k, n in answered_per_item.items()),
        gold=len(gold),
        gold_right=sum(r["answer"] == r["correct"] for r in gold),
    )


@dataclass(frozen=True)
class Unit:
    """A unit as one annotator sees it."""

    id: int
    kind: str
    item_id: str
    subset: str
    practice: bool
    gold: bool
    correct: str | None
    payload: dict[str, Any]
    options: list[str]  # option ids in the order shown (fixed choices last)
    answer: str | None
    edit: str | None
    seq: int
    page: str | None  # the token of the page it was served with (None: never shown)


_UNIT_SQL = (
    "SELECT u.id, u.kind, u.item_id, u.subset, u.practice, u.gold, u.correct, u.payload,"
    " a.options, a.answer, a.edit, a.seq, a.page FROM assignments a JOIN units u"
    " ON u.id = a.unit WHERE a.annotator = ?"
)


def _unit(row: sqlite3.Row) -> Unit:
    return Unit(
        row["id"], row["kind"], row["item_id"], row["subset"], bool(row["practice"]),
        bool(row["gold"]), row["correct"], json.loads(row["payload"]), json.loads(row["options"]),
        row["answer"], row["edit"], row["seq"], row["page"],
    )  # fmt: skip


def serve_next(con: Connection, aid: str, new_page: Callable[[], str]) -> None:
    """Serve the annotator's first unanswered unit now, where it has not been served: its
    serve time and a page token (`new_page()`); inside the caller's `write`. The transaction
    that starts an annotator or records an answer serves the next unit with it, so the page
    the browser is sent to next reads it without a write of its own."""
    row = con.execute(
        "SELECT unit, page FROM assignments WHERE annotator = ? AND answer IS NULL"
        " ORDER BY seq LIMIT 1",
        (aid,),
    ).fetchone()
    if row is None or row["page"] is not None:
        return
    now = clock()
    con.execute(
        "UPDATE assignments SET served_at = ?, page = ? WHERE annotator = ? AND unit = ?",
        (now, new_page(), aid, row["unit"]),
    )
    con.execute("UPDATE annotators SET last_seen = ? WHERE id = ?", (now, aid))


def next_unit(con: Connection, aid: str, new_page: Callable[[], str]) -> Unit | None:
    """The annotator's first unanswered unit, or None; served (`serve_next`, committed on
    return) where it was not yet, and a later showing keeps its serve time and page token."""
    row = con.execute(f"{_UNIT_SQL} AND a.answer IS NULL ORDER BY a.seq LIMIT 1", (aid,)).fetchone()
    if row is None or row["page"] is not None:
        return None if row is None else _unit(row)
    with write(con):
        serve_next(con, aid, new_page)
        row = con.execute(
            f"{_UNIT_SQL} AND a.answer IS NULL ORDER BY a.seq LIMIT 1", (aid,)
        ).fetchone()
    return None if row is None else _unit(row)


def served_unit(con: Connection, aid: str, page: str) -> Unit | None:
    """The annotator's unit that was served with the page token `page`, or None."""
    row = con.execute(f"{_UNIT_SQL} AND a.page = ?", (aid, page)).fetchone()
    return None if row is None else _unit(row)


def unit_for_page(con: Connection, page: str) -> Unit | None:
    """The unit served with the page token `page`, whoever it was served to."""
    row = con.execute(
        _UNIT_SQL.replace("WHERE a.annotator = ?", "WHERE a.page = ?"), (page,)
    ).fetchone()
    return None if row is None else _unit(row)


def annotator_unit(con: Connection, aid: str, unit_id: int) -> Unit | None:
    """One of the annotator's units (None if it is not theirs)."""
    row = con.execute(f"{_UNIT_SQL} AND a.unit = ?", (aid, unit_id)).fetchone()
    return None if row is None else _unit(row)


def annotator_units(con: Connection, aid: str) -> list[Unit]:
    """Every unit of the annotator, in serving order."""
    return [_unit(r) for r in con.execute(f"{_UNIT_SQL} ORDER BY a.seq", (aid,))]


def record_answer(
    con: Connection,
    aid: str,
    page: str,
    answer: str,
    edit: str | None,
    new_page: Callable[[], str] | None = None,
) -> Unit | None:
    """Record an answer to the unit served with page token `page`, with its seconds since the
    server served it (committed on return); with `new_page`, the next unit is served in the
    same transaction (`serve_next`: not after a practice unit, whose feedback page comes
    first). The unit, or None when that unit is not the annotator's current one (the first
    unanswered: never shown, answered, given back)."""
    with write(con):
        row = con.execute(
            f"{_UNIT_SQL} AND a.answer IS NULL ORDER BY a.seq LIMIT 1", (aid,)
        ).fetchone()
        if row is None or row["page"] is None or row["page"] != page:
            return None
        (served,) = con.execute(
            "SELECT served_at FROM assignments WHERE annotator = ? AND unit = ?",
            (aid, row["id"]),
        ).fetchone()
        now = clock()
        con.execute(
            "UPDATE assignments SET answer = ?, edit = ?, seconds = ?, answered_at = ?"
            " WHERE annotator = ? AND unit = ?",
            (answer, edit, max(0.0, now - served), now_iso(), aid, row["id"]),
        )
        con.execute("UPDATE annotators SET last_seen = ? WHERE id = ?", (now, aid))
        if new_page is not None and not row["practice"]:
            serve_next(con, aid, new_page)
    return _unit(row)


@dataclass(frozen=True)
class Assignment:
    """An assignment with its unit's kind and right answer, for progress and agreement."""

    annotator: str
    unit: int
    answer: str | None
    seconds: float | None
    kind: str
    practice: bool
    gold: bool
    correct: str | None
    item_key: str = ""


def assignments(con: Connection) -> list[Assignment]:
    """Every assignment, answered or not."""
    rows = con.execute(
        "SELECT a.annotator, a.unit, a.answer, a.seconds, u.kind, u.practice, u.gold,"
        " u.correct, u.item_key FROM assignments a JOIN units u ON u.id = a.unit"
    )
    return [
        Assignment(r["annotator"], r["unit"], r["answer"], r["seconds"], r["kind"],
                   bool(r["practice"]), bool(r["gold"]), r["correct"], r["item_key"])
        for r in rows
    ]  # fmt: skip


@dataclass(frozen=True)
class GivenAnswer:
    """An answer with its unit and annotator, as the answers table exports it."""

    kind: str
    item_id: str
    subset: str
    benchmark: str
    annotator: str
    practice: bool
    gold: bool
    options: list[str]
    answer: str
    right: str | None  # the unit's right answer, where it has one
    edit: str | None
    seconds: float
    answered_at: str
    seed: int


def answers(con: Connection) -> list[GivenAnswer]:
    """Every answer given, in answer order within each annotator."""
    rows = con.execute(
        "SELECT u.kind, u.item_id, u.subset, u.benchmark, a.annotator, u.practice, u.gold,"
        " a.options, a.answer, u.correct, a.edit, a.seconds, a.answered_at, n.seed"
        " FROM assignments a JOIN units u ON u.id = a.unit JOIN annotators n ON n.id = a.annotator"
        " WHERE a.answer IS NOT NULL ORDER BY a.annotator, a.seq"
    )
    return [
        GivenAnswer(r["kind"], r["item_id"], r["subset"], r["benchmark"], r["annotator"],
                    bool(r["practice"]), bool(r["gold"]), json.loads(r["options"]), r["answer"],
                    r["correct"], r["edit"], float(r["seconds"]), r["answered_at"],
                    int(r["seed"]))
        for r in rows
    ]  # fmt: skip


# --- checks of the file ---------------------------------------------------------------------


def integrity_problem(con: Connection) -> str | None:
    """SQLite's ``quick_check`` of the study file: None where it is sound, else its first
    finding."""
    try:
        rows = [r[0] for r in con.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if rows == ["ok"]:
        return None
    found = str(rows[0]).replace("*** in database main ***", "")
    return " ".join(found.split())  # one line


#: The error of a study file that SQLite could not read or write.
StudyFileError = sqlite3.DatabaseError

# SQLite's primary result codes (the low byte) of a file that cannot take a write now.
_WRITE_FAILURES = {
    13: "the server's disk is full",  # SQLITE_FULL
    8: "the study file cannot be written",  # SQLITE_READONLY
    10: "the study file cannot be written (I/O error)",  # SQLITE_IOERR
    5: "the study is busy",  # SQLITE_BUSY
    6: "the study is busy",  # SQLITE_LOCKED
    11: "the study file is damaged",  # SQLITE_CORRUPT
    26: "the study file is damaged",  # SQLITE_NOTADB
}


def write_failure(exc: BaseException) -> str | None:
    """Why the study file could not take a request (a full disk, a read-only file, busy,
    damaged) when `exc` is SQLite's error saying so, else None."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    return _WRITE_FAILURES.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)

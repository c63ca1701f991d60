"""Merge the request stores a sweep's workers wrote into the main store.

A request store (`lexsem.engine.request_store`) is content-addressed: a key is a digest of what
was asked, in the database of the model that answered, so two stores of one model hold the
same value under the same key and a merge is a union. The same key with different bytes (a
model that is not deterministic, a record replaced by hand) is a `StoreConflict` naming the
key and both files, and nothing of that file is merged: a merge never overwrites. A row whose
bytes fail their digest is left out (and counted); a damaged row of the main store under a key
the worker's store holds soundly is replaced by it.

Each worker file is merged in one transaction of the main store (SQLite's lock), so merges
running in several processes at once are safe on one machine, and a merge interrupted leaves
the main store as it was or merged whole.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from lexsem.engine.request_store import RequestStore, row_digest, table_layout
from lexsem.errors import CacheError

__all__ = ["MergeStats", "StoreConflict", "merge_store_file", "merge_stores", "store_rows"]

BUSY_TIMEOUT_MS = 120_000


class StoreConflict(CacheError):
    """Two stores of one model hold different values under one key."""


@dataclass
class MergeStats:
    """What a merge did: files merged, rows added, rows the main store already held, rows left
    out because their bytes failed their digest."""

    files: int = 0
    added: int = 0
    present: int = 0
    damaged: int = 0
    keys: list[str] = field(default_factory=list)  # model keys merged

    def __iadd__(self, other: MergeStats) -> MergeStats:
        self.files += other.files
        self.added += other.added
        self.present += other.present
        self.damaged += other.damaged
        self.keys += [k for k in other.keys if k not in self.keys]
        return self


def _sound(data: bytes | None, size: int | None, digest: bytes | None, unit: int) -> int:
    """1 when a row's bytes match its length and digest (an SQL function), else 0."""
    ok = (
        isinstance(data, bytes)
        and isinstance(size, int)
        and len(data) == size * unit
        and digest == row_digest(data)
    )
    return int(ok)


def _source_tables(conn: sqlite3.Connection, src: Path, model_key: str) -> list[str]:
    tables = {r[0] for r in conn.execute("SELECT name FROM src.sqlite_master WHERE type='table'")}
    if "meta" not in tables:
        return []  # created, never initialised: nothing stored
    meta = dict(conn.execute("SELECT name, value FROM src.meta").fetchall())
    if meta.get("model_key") != model_key:
        raise CacheError(
            f"{src}: the store belongs to model key {meta.get('model_key')!r}, not "
            f"{model_key!r} as its file name says"
        )
    return [t for t in table_layout() if t in tables]


def merge_store_file(src: str | Path, dest_root: str | Path) -> MergeStats:
    """Merge the store file `src` (`<model key>.sqlite`) into the store of the same model
    under the cache root `dest_root`; `StoreConflict` when a key's value differs."""
    src = Path(src)
    model_key = src.name.removesuffix(".sqlite")
    with RequestStore(Path(dest_root), model_key) as dest:  # created and upgraded, locked
        if not dest.writable:
            raise CacheError(f"cannot merge into the request store {dest.path}: it is read-only")
        dest_path = dest.path
    conn = sqlite3.connect(
        str(dest_path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, uri=True
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.create_function("lexsem_sound", 4, _sound, deterministic=True)
        try:
            conn.execute("ATTACH DATABASE ? AS src", (f"file:{src.resolve()}?mode=ro",))
        except sqlite3.Error as exc:
            raise CacheError(f"cannot read the request store {src}: {exc}") from exc
        return _merge(conn, src, dest_path, model_key)
    except sqlite3.DatabaseError as exc:
        raise CacheError(f"cannot merge {src} into {dest_path}: {exc}") from exc
    finally:
        conn.close()


def _merge(conn: sqlite3.Connection, src: Path, dest: Path, model_key: str) -> MergeStats:
    stats = MergeStats(files=1, keys=[model_key])
    layout = table_layout()
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in _source_tables(conn, src, model_key):
            size, data, unit = layout[table]
            good_s = f"lexsem_sound(s.{data}, s.{size}, s.digest, {unit})"
            good_d = f"lexsem_sound(d.{data}, d.{size}, d.digest, {unit})"
            clash = conn.execute(
                f"SELECT s.key FROM src.{table} s JOIN main.{table} d ON s.key = d.key "
                f"WHERE {good_s} AND {good_d} AND (s.{data} IS NOT d.{data} "
                f"OR s.{size} IS NOT d.{size}) LIMIT 1"
            ).fetchone()
            if clash is not None:
                raise StoreConflict(
                    f"{src}: key {clash[0]} ({table} of model {model_key}) holds a value that "
                    f"differs from the one in {dest}; nothing of {src.name} was merged (a merge "
                    "never overwrites: delete one of the two values to keep the other)"
                )
            stats.damaged += conn.execute(
                f"SELECT COUNT(*) FROM src.{table} s WHERE NOT {good_s}"
            ).fetchone()[0]
            conn.execute(  # a damaged row of the main store gives way to a sound one
                f"DELETE FROM main.{table} AS d WHERE NOT {good_d} AND d.key IN "
                f"(SELECT s.key FROM src.{table} s WHERE {good_s})"
            )
            before = conn.total_changes
            conn.execute(
                f"INSERT OR IGNORE INTO main.{table} (key, {size}, {data}, digest) "
                f"SELECT s.key, s.{size}, s.{data}, s.digest FROM src.{table} s WHERE {good_s}"
            )
            added = conn.total_changes - before
            stats.added += added
            stats.present += (
                conn.execute(f"SELECT COUNT(*) FROM src.{table} s WHERE {good_s}").fetchone()[0]
                - added
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return stats


def merge_stores(src_root: str | Path, dest_root: str | Path) -> MergeStats:
    """Merge every store under the cache root `src_root` (its `embeddings/*.sqlite`) into
    those under `dest_root`, file by file (sorted)."""
    stats = MergeStats()
    for file in sorted((Path(src_root) / "embeddings").glob("*.sqlite")):
        stats += merge_store_file(file, dest_root)
    return stats


def store_rows(root: str | Path) -> dict[tuple[str, str, str], tuple[int, bytes]]:
    """Every row of every store under the cache root `root`: (model key, table, key) ->
    (size, bytes). Two roots holding the same values compare equal."""
    out: dict[tuple[str, str, str], tuple[int, bytes]] = {}
    for file in sorted((Path(root) / "embeddings").glob("*.sqlite")):
        model_key = file.name.removesuffix(".sqlite")
        conn = sqlite3.connect(f"file:{file.resolve()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            for table, (size, data, _) in table_layout().items():
                if table in tables:
                    for key, n, blob in conn.execute(f"SELECT key, {size}, {data} FROM {table}"):
                        out[(model_key, table, key)] = (n, bytes(blob))
        finally:
            conn.close()
    return out

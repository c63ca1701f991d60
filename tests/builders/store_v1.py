"""A cache file in the schema-1 layout, to test that lexsem reads and migrates it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from builders.backends import optional_import

torch = optional_import("torch")

MODEL = "0123abcd" * 8  # looks like a fingerprint key


def write_v1_store(root: Path, model_key: str, keys: list[str], vecs: np.ndarray) -> Path:
    """A schema-1 cache file exactly as lexsem's first `EmbeddingCache` wrote it."""
    path = root / "embeddings" / f"{model_key}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            " key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL, digest BLOB NOT NULL)"
        )
        conn.executemany(
            "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)",
            [("model_key", model_key), ("schema_version", "1")],
        )
        rows = []
        for k, v in zip(keys, np.asarray(vecs, dtype="<f4"), strict=True):
            blob = v.tobytes()
            rows.append((k, len(v), blob, hashlib.blake2b(blob, digest_size=8).digest()))
        conn.executemany("INSERT INTO vectors (key, dim, vec, digest) VALUES (?, ?, ?, ?)", rows)
        conn.commit()
    finally:
        conn.close()
    return path

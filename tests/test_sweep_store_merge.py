"""Merging workers' request stores into the main store: a union; the same key with other bytes
is an error naming the key, never an overwrite; damaged rows are left out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from lexsem.engine.request_store import RequestStore
from lexsem.sweep.store_merge import StoreConflict, merge_store_file, merge_stores, store_rows


def _fill(root: Path, key: str = "m") -> RequestStore:
    return RequestStore(root, key)


def test_a_merge_is_the_union_of_the_stores(tmp_path: Path) -> None:
    with _fill(tmp_path / "a") as s:
        s.put_vectors(["k1", "k2"], np.arange(6, dtype=np.float32).reshape(2, 3))
        s.put_records(["r1"], [{"answer": "(1)"}])
    with _fill(tmp_path / "b") as s:
        s.put_vectors(["k2", "k3"], np.arange(3, 9, dtype=np.float32).reshape(2, 3))
        s.put_scalars(["p1"], [0.25])
    with _fill(tmp_path / "b", "other") as s:
        s.put_scalars(["q"], [1.0])
    a = merge_stores(tmp_path / "a", tmp_path / "main")
    b = merge_stores(tmp_path / "b", tmp_path / "main")
    assert (a.added, a.present, b.added, b.present, b.files) == (3, 0, 3, 1, 2)
    union = {**store_rows(tmp_path / "a"), **store_rows(tmp_path / "b")}
    assert store_rows(tmp_path / "main") == union
    with RequestStore(tmp_path / "main", "m", readonly=True) as main:  # readable as a store
        assert main.get_vectors(["k3"])["k3"].tolist() == [6.0, 7.0, 8.0]
        assert main.get_records(["r1"]) == {"r1": {"answer": "(1)"}}
    again = merge_stores(tmp_path / "b", tmp_path / "main")  # merging twice changes nothing
    assert again.added == 0 and store_rows(tmp_path / "main") == union


def test_the_same_key_with_other_bytes_is_an_error_never_an_overwrite(tmp_path: Path) -> None:
    with _fill(tmp_path / "main") as s:
        s.put_vectors(["k1"], np.ones((1, 3)))
    with _fill(tmp_path / "w") as s:
        s.put_vectors(["k0", "k1"], np.zeros((2, 3)))
    before = store_rows(tmp_path / "main")
    src = tmp_path / "w" / "embeddings" / "m.sqlite"
    with pytest.raises(StoreConflict, match=r"m.sqlite: key k1 \(vectors of model m\)") as info:
        merge_store_file(src, tmp_path / "main")
    assert "never overwrites" in str(info.value)
    assert store_rows(tmp_path / "main") == before  # nothing of the file merged, k0 neither


def test_damaged_rows_are_left_out_and_a_damaged_main_row_gives_way(tmp_path: Path) -> None:
    with _fill(tmp_path / "main") as s:
        s.put_vectors(["k1"], np.ones((1, 2)))
    with _fill(tmp_path / "w") as s:
        s.put_vectors(["k1", "k2"], np.full((2, 2), 2.0))
    main_db = tmp_path / "main" / "embeddings" / "m.sqlite"
    worker_db = tmp_path / "w" / "embeddings" / "m.sqlite"
    for db, key in ((main_db, "k1"), (worker_db, "k2")):  # flip bytes behind the digest
        conn = sqlite3.connect(db)
        conn.execute("UPDATE vectors SET vec = zeroblob(8) WHERE key = ?", (key,))
        conn.commit()
        conn.close()
    stats = merge_store_file(worker_db, tmp_path / "main")
    assert stats.damaged == 1
    with RequestStore(tmp_path / "main", "m", readonly=True) as main:
        assert main.get_vectors(["k1"])["k1"].tolist() == [2.0, 2.0]  # the sound row
        assert main.get_vectors(["k2"]) == {}  # the damaged one left out


def test_a_file_of_another_model_is_refused(tmp_path: Path) -> None:
    with _fill(tmp_path / "w", "m") as s:
        s.put_scalars(["x"], [1.0])
    (tmp_path / "w" / "embeddings" / "m.sqlite").rename(tmp_path / "w" / "n.sqlite")
    with pytest.raises(Exception, match=r"belongs to model key 'm', not 'n'"):
        merge_store_file(tmp_path / "w" / "n.sqlite", tmp_path / "main")

"""The request store when its place misbehaves (docs/reliability.md, "Cache"): a read-only cache
serves its values and warns that it stores nothing new; a cache deleted while a run uses it is
noticed, and a fresh store takes the new values."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders.fakes import BagOfWordsEncoder
from builders.privileges import where_permission_bits_apply
from lexsem import evaluate
from lexsem.engine.request_store import RequestStore

KEY = "model-key"


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], None]]:
    """Make a folder and its files refuse writes (the tests using it run where permission
    bits bind: `where_permission_bits_apply`)."""
    made: list[Path] = []

    def make(folder: Path) -> None:
        for f in folder.iterdir():
            f.chmod(0o444)
        folder.chmod(0o555)
        made.append(folder)

    yield make
    for folder in made:
        folder.chmod(0o755)
        for f in folder.iterdir():
            f.chmod(0o644)


def _filled(root: Path) -> None:
    with RequestStore(root, KEY) as store:
        store.put_vectors(["a"], np.ones((1, 3)))


@where_permission_bits_apply
def test_a_read_only_store_serves_its_values_and_stores_nothing(
    tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    _filled(tmp_path)
    read_only(tmp_path / "embeddings")
    with pytest.warns(RuntimeWarning, match="cannot be written .*: cached values are served, new"):
        store = RequestStore(tmp_path, KEY)
    with store:
        assert not store.writable and list(store.get_vectors(["a", "b"])) == ["a"]
        store.put_vectors(["b"], np.zeros((1, 3)))  # nothing stored, no error
        store.put_scalars(["c"], [1.0])
        assert store.get_vectors(["b"]) == {} and len(store) == 1


@where_permission_bits_apply
def test_a_fully_cached_run_works_on_a_read_only_cache(
    tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    settings: dict[str, Any] = {"cache_dir": tmp_path / "cache", "n_boot": 0}
    first = evaluate(BagOfWordsEncoder(), ["synthetic/swap_att"], **settings)
    read_only(tmp_path / "cache" / "embeddings")
    enc = BagOfWordsEncoder()
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        again = evaluate(enc, ["synthetic/swap_att,swap_obj"], **settings)
    assert enc.encoded and not set(enc.encoded) & {
        t for it in _items("synthetic/swap_att") for t in it.texts()
    }  # the cached texts came from the cache, only the new ones were encoded
    acc = {r.subset: r.accuracy for r in first.record.results}
    assert again.record.result("synthetic", "tot", "swap_att").accuracy == acc["swap_att"]


def _items(selector: str) -> list[Any]:
    from lexsem.benchmarks.load import load_benchmark

    return load_benchmark(selector).items


def test_sqlite_refusing_writes_also_falls_back_to_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(tmp_path)

    def refuse(self: RequestStore) -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(RequestStore, "_init_db", refuse)
    with pytest.warns(RuntimeWarning, match="readonly database"):
        store = RequestStore(tmp_path, KEY)
    with store:
        assert not store.writable and list(store.get_vectors(["a"])) == ["a"]


def test_a_store_deleted_mid_run_is_noticed_and_a_fresh_one_takes_new_values(
    tmp_path: Path,
) -> None:
    store = RequestStore(tmp_path, KEY)
    store.put_vectors(["a"], np.ones((1, 3)))
    shutil.rmtree(tmp_path / "embeddings")  # `rm -rf ~/.cache/lexsem` during a run
    with pytest.warns(RuntimeWarning, match="was deleted or replaced while in use"):
        store.put_vectors(["b"], np.ones((1, 3)))
    store.close()
    with RequestStore(tmp_path, KEY) as again:
        assert list(again.get_vectors(["a", "b"])) == ["b"]


def test_a_store_deleted_after_its_last_write_is_warned_on_close(tmp_path: Path) -> None:
    store = RequestStore(tmp_path, KEY)
    store.put_vectors(["a"], np.ones((1, 3)))
    (tmp_path / "embeddings" / f"{KEY}.sqlite").unlink()
    with pytest.warns(RuntimeWarning, match="deleted or replaced while in use: what this run"):
        store.close()

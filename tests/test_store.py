"""The request store, for each kind of value (vectors, scalars, records): exact round trips,
first writer wins, damage detection, read-only use, schema-1 files, threads, concurrent
processes, and processes killed mid-write."""

from __future__ import annotations

import hashlib
import math
import multiprocessing as mp
import os
import sqlite3
import struct
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders.store_v1 import MODEL, write_v1_store
from lexsem.engine.keys import request_key
from lexsem.engine.request_store import CHUNK_PARAMS, SCHEMA_VERSION, RequestStore
from lexsem.errors import CacheError

DIM = 16
KINDS = ("vectors", "scalars", "records")
TABLE_DATA = {"vectors": ("dim", "vec"), "scalars": ("n", "value"), "records": ("nbytes", "doc")}


def _key(i: int) -> str:
    return request_key("test", i=i)


def _value(kind: str, key: str) -> Any:
    """A value that depends only on the key and kind (so every writer agrees on it)."""
    rng = np.random.default_rng(int(key[:16], 16))
    if kind == "vectors":
        return rng.standard_normal(DIM).astype(np.float32)
    if kind == "scalars":
        return float(rng.standard_normal())
    return {"text": f"answer {key[:6]} ✓", "logprobs": rng.standard_normal(3).tolist(), "n": 3}


def _put(store: RequestStore, kind: str, keys: list[str], values: list[Any] | None = None) -> None:
    vals = [_value(kind, k) for k in keys] if values is None else values
    if kind == "vectors":
        store.put_vectors(keys, np.stack(vals) if vals else np.zeros((0, DIM), np.float32))
    elif kind == "scalars":
        store.put_scalars(keys, vals)
    else:
        store.put_records(keys, vals)


def _get(store: RequestStore, kind: str, keys: list[str]) -> dict[str, Any]:
    getter = {"vectors": store.get_vectors, "scalars": store.get_scalars}
    return getter.get(kind, store.get_records)(keys)


def _same(kind: str, got: Any, want: Any) -> bool:
    if kind == "vectors":
        return got.dtype == np.float32 and got.ndim == 1 and got.tobytes() == want.tobytes()
    if kind == "scalars":
        return type(got) is float and struct.pack("<d", got) == struct.pack("<d", want)
    return got == want


def _assert_exact(kind: str, found: dict[str, Any], keys: list[str]) -> None:
    assert set(found) == set(keys)
    for k in keys:
        assert _same(kind, found[k], _value(kind, k)), k


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def _meta(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT name, value FROM meta"))
    finally:
        conn.close()


# --------------------------------------------------------------------- child processes
# Module-level so that the 'spawn' start method can import them.


def _concurrent_writer(root: str, worker: int, go: Any) -> None:
    keys = [_key(i) for i in range(worker * 150, worker * 150 + 300)]  # overlaps neighbours
    np.random.default_rng(worker).shuffle(keys)
    go.wait(30)
    with RequestStore(Path(root), MODEL) as store:  # everyone opens/initialises at once
        for start in range(0, len(keys), 20):
            for kind in KINDS:  # each kind in turn, so their transactions interleave too
                _put(store, kind, keys[start : start + 20])
                done = keys[: start + 20]
                found = _get(store, kind, done)
                if set(found) != set(done) or not all(
                    _same(kind, found[k], _value(kind, k)) for k in done
                ):
                    os._exit(3)


def _exit_mid_transaction(root: str, kind: str) -> None:
    with RequestStore(Path(root), MODEL) as store:
        _put(store, kind, [_key(i) for i in range(200)])
        # The next put dies after 190 of its 200 INSERTs, before its COMMIT.
        inserts = iter(range(190))

        def trace(sql: str) -> None:
            if sql.startswith("INSERT") and next(inserts, None) is None:
                os._exit(17)

        store._conn.set_trace_callback(trace)  # type: ignore[union-attr]
        _put(store, kind, [_key(i) for i in range(200, 400)])
    os._exit(0)  # not reached when the trace fired


def _write_forever(root: str) -> None:
    """Batch b holds keys b*50 .. b*50+49 of kind KINDS[b % 3]; batches commit in order."""
    with RequestStore(Path(root), MODEL) as store:
        for b in range(100_000):
            _put(store, KINDS[b % 3], [_key(i) for i in range(b * 50, b * 50 + 50)])


# --------------------------------------------------------------------- basics

AWKWARD_SCALARS = [
    0.1,  # not a float32
    -0.0,
    math.inf,
    -math.inf,
    5e-324,
    1.7976931348623157e308,
    123456789.123456789,
]
AWKWARD_RECORDS = [
    {"text": "naïve café — 猫", "tokens": ["a", "\x00b"], "logprobs": [-0.5, -math.inf]},
    ["a", 1, 2.5, None, True, {"nested": {"deep": []}}],
    "",
    None,
    0,
    {"raw": {"choices": [{"message": {"content": "yes"}}], "usage": {"total_tokens": 7}}},
    -0.0,
]


@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_exact(tmp_path: Path, kind: str) -> None:
    if kind == "vectors":
        values: list[Any] = list(np.random.default_rng(0).standard_normal((7, 384), np.float32))
        values[0][:4] = [np.float32(1e-45), -0.0, np.inf, np.finfo(np.float32).max]
    else:
        values = AWKWARD_SCALARS if kind == "scalars" else AWKWARD_RECORDS
    keys = [_key(i) for i in range(len(values))]
    with RequestStore(tmp_path, MODEL) as store:
        assert store.path == tmp_path / "embeddings" / f"{MODEL}.sqlite"
        _put(store, kind, keys, values)
    with RequestStore(tmp_path, MODEL) as store:  # reopened: read from disk
        found = _get(store, kind, keys)
        assert store.count(kind) == len(keys) == len(store)
    assert set(found) == set(keys)
    for k, want in zip(keys, values, strict=True):
        assert _same(kind, found[k], want), (k, found[k], want)
    raw = sqlite3.connect(tmp_path / "embeddings" / f"{MODEL}.sqlite")
    try:  # WAL is what lets readers and a writer in different processes work at once
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        raw.close()


def test_scalar_nan_round_trips(tmp_path: Path) -> None:
    with RequestStore(tmp_path, MODEL) as store:
        store.put_scalars([_key(0), _key(1)], np.array([np.nan, 2], dtype=np.float32))
        found = store.get_scalars([_key(0), _key(1)])
    assert math.isnan(found[_key(0)]) and found[_key(1)] == 2.0  # NaN is a value, not a miss


def test_kinds_are_separate(tmp_path: Path) -> None:
    k = [_key(0)]
    with RequestStore(tmp_path, MODEL) as store:
        for kind in KINDS:
            _put(store, kind, k)
        for kind in KINDS:
            _assert_exact(kind, _get(store, kind, k), k)
            assert store.count(kind) == 1  # type: ignore[arg-type]
        assert len(store) == 3
        with pytest.raises(ValueError, match="unknown value kind"):
            store.count("blobs")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
def test_hits_and_misses(tmp_path: Path, kind: str) -> None:
    with RequestStore(tmp_path, MODEL) as store:
        assert len(store) == 0
        assert _get(store, kind, [_key(0)]) == {}
        assert _get(store, kind, []) == {}
        stored = [_key(i) for i in range(10)]
        _put(store, kind, stored)
        _put(store, kind, [])  # nothing to write is fine
        assert store.count(kind) == 10  # type: ignore[arg-type]
        asked = [_key(i) for i in range(5, 15)] + [_key(5)]  # duplicates are fine
        _assert_exact(kind, _get(store, kind, asked), [_key(i) for i in range(5, 10)])
        many = [_key(i) for i in range(10, 10 + 2 * CHUNK_PARAMS + 7)]  # several SELECT chunks
        _put(store, kind, many)
        _assert_exact(kind, _get(store, kind, [*many, "0" * 64]), many)


@pytest.mark.parametrize("kind", KINDS)
def test_second_put_of_same_key_is_ignored(tmp_path: Path, kind: str) -> None:
    k = [_key(1), _key(2)]
    other = {"vectors": np.full(DIM, 7.0, np.float32), "scalars": 7.0, "records": {"x": 7}}[kind]
    with RequestStore(tmp_path, MODEL) as store:
        _put(store, kind, k[:1])
        _put(store, kind, k, [other, other])  # first writer wins
        found = _get(store, kind, k)
        assert _same(kind, found[k[0]], _value(kind, k[0]))
        assert _same(kind, found[k[1]], other)
        assert store.count(kind) == 2  # type: ignore[arg-type]


def test_bad_input_and_closed(tmp_path: Path) -> None:
    store = RequestStore(tmp_path, MODEL)
    k = [_key(0)]
    with pytest.raises(ValueError, match="shape"):
        store.put_vectors(k, np.zeros((2, DIM), np.float32))
    with pytest.raises(ValueError, match="floating"):
        store.put_vectors(k, np.zeros((1, DIM), np.int64))
    with pytest.raises(ValueError, match="shape"):
        store.put_scalars(k, [1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        store.put_scalars(k, [[1.0]])
    with pytest.raises(ValueError, match="real numbers"):
        store.put_scalars(k, ["1.0"])
    with pytest.raises(ValueError, match="real numbers"):
        store.put_scalars(k, [True])
    with pytest.raises(ValueError, match="records for 1 keys"):
        store.put_records(k, [{}, {}])
    with pytest.raises(ValueError, match="not JSON"):
        store.put_records(k, [{"raw": b"bytes"}])
    with pytest.raises(TypeError, match="keys must be str"):
        store.put_scalars([b"k"], [1.0])  # type: ignore[list-item]
    assert len(store) == 0  # nothing half-written
    store.close()
    store.close()
    for kind in KINDS:
        with pytest.raises(CacheError, match="closed"):
            _get(store, kind, k)
        with pytest.raises(CacheError, match="closed"):
            _put(store, kind, k)
    with pytest.raises(CacheError, match="invalid model key"):
        RequestStore(tmp_path, "../escape")


def test_model_key_mismatch_and_newer_schema(tmp_path: Path) -> None:
    with RequestStore(tmp_path, MODEL) as store:
        path = store.path
    assert _meta(path) == {"model_key": MODEL, "schema_version": str(SCHEMA_VERSION)}
    other = path.with_name("other.sqlite")
    path.rename(other)
    with pytest.raises(CacheError, match="belongs to model key"):
        RequestStore(tmp_path, "other")
    with pytest.raises(CacheError, match="belongs to model key"):
        RequestStore(tmp_path, "other", readonly=True)
    other.rename(path)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (SCHEMA_VERSION + 1,))
    raw.commit()
    raw.close()
    for readonly in (True, False):
        with pytest.raises(CacheError, match="schema version"):
            RequestStore(tmp_path, MODEL, readonly=readonly)
    assert _meta(path)["schema_version"] == str(SCHEMA_VERSION + 1)  # left as it was


@pytest.mark.parametrize("kind", KINDS)
def test_readonly(tmp_path: Path, kind: str) -> None:
    with RequestStore(tmp_path, MODEL, readonly=True) as store:  # nothing there yet
        assert len(store) == 0 and _get(store, kind, [_key(0)]) == {}
        with pytest.raises(CacheError, match="read-only"):
            _put(store, kind, [_key(0)])
    assert not (tmp_path / "embeddings").exists()
    keys = [_key(i) for i in range(5)]
    with RequestStore(tmp_path, MODEL) as store:
        _put(store, kind, keys)
        with RequestStore(tmp_path, MODEL, readonly=True) as ro:  # beside a writer
            _assert_exact(kind, _get(ro, kind, keys), keys)
            with pytest.raises(CacheError, match="read-only"):
                _put(ro, kind, keys)
            _put(store, kind, [_key(9)])  # the writer's later commits are seen
            _assert_exact(kind, _get(ro, kind, [_key(9)]), [_key(9)])


def test_threads_share_one_store(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    with RequestStore(tmp_path, MODEL) as store:

        def work(t: int) -> None:
            try:
                for b in range(10):
                    keys = [_key(i) for i in range(t * 1000 + b * 10, t * 1000 + b * 10 + 10)]
                    kind = KINDS[(t + b) % 3]
                    _put(store, kind, keys)
                    _assert_exact(kind, _get(store, kind, keys), keys)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(store) == 600


# --------------------------------------------------------------------- schema 1


def test_schema1_file_read_only_serves_its_vectors(tmp_path: Path) -> None:
    keys = [_key(i) for i in range(5)]
    path = write_v1_store(tmp_path, MODEL, keys, np.stack([_value("vectors", k) for k in keys]))
    before = path.read_bytes()
    with RequestStore(tmp_path, MODEL, readonly=True) as ro:
        _assert_exact("vectors", ro.get_vectors(keys), keys)
        assert ro.get_scalars(keys) == {} and ro.get_records(keys) == {}
        assert ro.count("scalars") == 0 and len(ro) == 5
        with pytest.raises(CacheError, match="read-only"):
            ro.put_scalars(keys[:1], [1.0])
    assert path.read_bytes() == before and _meta(path)["schema_version"] == "1"


def test_schema1_file_is_upgraded_when_opened_for_writing(tmp_path: Path) -> None:
    keys = [_key(i) for i in range(5)]
    path = write_v1_store(tmp_path, MODEL, keys, np.stack([_value("vectors", k) for k in keys]))
    with RequestStore(tmp_path, MODEL) as store:
        _assert_exact("vectors", store.get_vectors(keys), keys)
        for kind in ("scalars", "records"):
            _put(store, kind, keys)
    assert _meta(path) == {"model_key": MODEL, "schema_version": str(SCHEMA_VERSION)}
    with RequestStore(tmp_path, MODEL, readonly=True) as ro:
        for kind in KINDS:
            _assert_exact(kind, _get(ro, kind, keys), keys)
    assert _integrity(path) == "ok"


# --------------------------------------------------------------------- damage

DAMAGES = ["flip_byte", "truncate", "wrong_size", "digest"]


def _damage(path: Path, kind: str, key: str, damage: str) -> None:
    size, data = TABLE_DATA[kind]
    raw = sqlite3.connect(path)
    (blob,) = raw.execute(f"SELECT {data} FROM {kind} WHERE key = ?", (key,)).fetchone()
    if damage == "flip_byte":
        raw.execute(
            f"UPDATE {kind} SET {data} = ? WHERE key = ?", (bytes([blob[0] ^ 1]) + blob[1:], key)
        )
    elif damage == "truncate":
        raw.execute(f"UPDATE {kind} SET {data} = ? WHERE key = ?", (blob[:-4], key))
    elif damage == "wrong_size":
        raw.execute(f"UPDATE {kind} SET {size} = {size} + 1 WHERE key = ?", (key,))
    elif damage == "digest":
        raw.execute(f"UPDATE {kind} SET digest = zeroblob(8) WHERE key = ?", (key,))
    else:  # bytes that pass length and digest checks but do not decode
        bad = b"\xff\xfe not json"
        digest = hashlib.blake2b(bad, digest_size=8).digest()
        raw.execute(
            f"UPDATE {kind} SET {data} = ?, {size} = ?, digest = ? WHERE key = ?",
            (bad, len(bad), digest, key),
        )
    raw.commit()
    raw.close()


@pytest.mark.parametrize(
    "kind,damage", [(k, d) for k in KINDS for d in DAMAGES] + [("records", "undecodable")]
)
def test_corrupted_row_is_a_miss(tmp_path: Path, kind: str, damage: str) -> None:
    keys = [_key(i) for i in range(5)]
    with RequestStore(tmp_path, MODEL) as store:
        _put(store, kind, keys)
        path = store.path
    _damage(path, kind, keys[2], damage)

    with RequestStore(tmp_path, MODEL, readonly=True) as ro:  # read-only: ignored, kept
        with pytest.warns(RuntimeWarning, match=r"corrupt .*ignored them") as rec:
            _assert_exact(kind, _get(ro, kind, keys), keys[:2] + keys[3:])
        assert str(path) in str(rec[0].message)
        assert ro.count(kind) == 5  # type: ignore[arg-type]

    with RequestStore(tmp_path, MODEL) as store:
        with pytest.warns(RuntimeWarning, match=r"corrupt .*deleted them") as rec:
            found = _get(store, kind, keys)
        assert str(path) in str(rec[0].message)
        _assert_exact(kind, found, keys[:2] + keys[3:])
        assert store.count(kind) == 4  # type: ignore[arg-type]  # deleted: recomputed next
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _get(store, kind, keys[2:3]) == {}
        _put(store, kind, keys[2:3])  # rewritten
        _assert_exact(kind, _get(store, kind, keys), keys)
    assert _integrity(path) == "ok"


@pytest.mark.parametrize(
    "garbage",
    [os.urandom(5000), b"not a database at all\n" * 10, b"SQLite format 3\x00" + b"\xff" * 4000],
    ids=["random", "text", "bad_pages"],
)
def test_garbage_database_is_moved_aside(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "embeddings" / f"{MODEL}.sqlite"
    path.parent.mkdir(parents=True)
    path.write_bytes(garbage)

    with pytest.raises(CacheError, match=str(path.name)):
        RequestStore(tmp_path, MODEL, readonly=True)
    assert path.read_bytes() == garbage  # read-only never moves anything

    with pytest.warns(RuntimeWarning, match="moved it to") as rec:
        store = RequestStore(tmp_path, MODEL)
    assert str(path) in str(rec[0].message)
    with store:
        aside = list(path.parent.glob(f"{path.name}.corrupt-*"))
        assert len(aside) == 1 and aside[0].read_bytes() == garbage
        assert len(store) == 0
        keys = [_key(i) for i in range(3)]
        for kind in KINDS:
            _put(store, kind, keys)
            _assert_exact(kind, _get(store, kind, keys), keys)
    assert _integrity(path) == "ok"


# --------------------------------------------------------------------- processes


def test_concurrent_writers(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_concurrent_writer, args=(str(tmp_path), w, go)) for w in range(4)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]

    expected = [_key(i) for i in range(3 * 150 + 300)]
    with RequestStore(tmp_path, MODEL) as store:
        for kind in KINDS:
            assert store.count(kind) == len(expected)  # type: ignore[arg-type]
            _assert_exact(kind, _get(store, kind, expected), expected)
        path = store.path
    assert _integrity(path) == "ok"


@pytest.mark.parametrize("kind", KINDS)
def test_exit_inside_a_transaction_keeps_only_committed_rows(tmp_path: Path, kind: str) -> None:
    p = mp.get_context("spawn").Process(target=_exit_mid_transaction, args=(str(tmp_path), kind))
    p.start()
    p.join(60)
    assert p.exitcode == 17  # died inside the second put

    first = [_key(i) for i in range(200)]
    with RequestStore(tmp_path, MODEL) as store:
        assert len(store) == store.count(kind) == 200  # type: ignore[arg-type]
        _assert_exact(kind, _get(store, kind, [_key(i) for i in range(400)]), first)
        _put(store, kind, [_key(i) for i in range(200, 400)])  # the next run resumes
        assert store.count(kind) == 400  # type: ignore[arg-type]
        path = store.path
    assert _integrity(path) == "ok"


def test_killed_writer_leaves_complete_batches(tmp_path: Path) -> None:
    p = mp.get_context("spawn").Process(target=_write_forever, args=(str(tmp_path),))
    p.start()
    path = tmp_path / "embeddings" / f"{MODEL}.sqlite"
    deadline = time.monotonic() + 60
    n = 0
    try:
        while time.monotonic() < deadline and n < 3000:
            time.sleep(0.02)
            if path.exists():
                with RequestStore(tmp_path, MODEL, readonly=True) as ro:
                    n = len(ro)
    finally:
        p.kill()  # SIGKILL, mid-write most likely
        p.join(30)
    assert n >= 3000, "the writer never got going"

    with RequestStore(tmp_path, MODEL) as store:
        total = len(store)
        assert total >= n and total % 50 == 0
        n_batches = total // 50  # batches commit in order: exactly the first n_batches are there
        for kind_i, kind in enumerate(KINDS):
            batches = range(kind_i, n_batches + 3, 3)
            asked = [_key(i) for b in batches for i in range(b * 50, b * 50 + 50)]
            whole = [_key(i) for b in batches if b < n_batches for i in range(b * 50, b * 50 + 50)]
            _assert_exact(kind, _get(store, kind, asked), whole)
            more = [_key(i) for i in range(10**7, 10**7 + 10)]
            _put(store, kind, more)  # the store is still writable
            _assert_exact(kind, _get(store, kind, more), more)
    assert _integrity(path) == "ok"

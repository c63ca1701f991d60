"""Merging workers' request stores into the main store (`RequestStore.merge`): a union; floats
of one key within the fp32 tolerance are the same value (the main store's kept, the deviation
recorded); anything else under one key is a `StoreConflict` naming both files and the key,
never an overwrite; damaged rows are left out. In a sweep, a conflict leaves the worker's file
for the next run, which merges once it is resolved."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.sweep_folders import write_grid
from lexsem.cli import app
from lexsem.engine.request_store import (
    MERGE_RTOL,
    RequestStore,
    StoreConflict,
    merge_store,
    merge_stores,
    store_rows,
)
from lexsem.errors import CacheError
from lexsem.sweep.runner import run_sweep


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
    assert (b.close, b.max_deviation) == (0, 0.0)
    union = {**store_rows(tmp_path / "a"), **store_rows(tmp_path / "b")}
    assert store_rows(tmp_path / "main") == union
    with RequestStore(tmp_path / "main", "m", readonly=True) as main:  # readable as a store
        assert main.get_vectors(["k3"])["k3"].tolist() == [6.0, 7.0, 8.0]
        assert main.get_records(["r1"]) == {"r1": {"answer": "(1)"}}
    again = merge_stores(tmp_path / "b", tmp_path / "main")  # merging twice changes nothing
    assert again.added == 0 and store_rows(tmp_path / "main") == union


def test_floats_within_the_fp32_tolerance_are_the_same_value(tmp_path: Path) -> None:
    """Another process's kernels round the last bits otherwise: 1e-7 relative merges, the main
    store's value kept and the largest deviation recorded."""
    rng = np.random.default_rng(0)
    vec = rng.standard_normal((1, 64)).astype(np.float32)
    nudge = (vec * (1 + 1e-7 * rng.standard_normal(vec.shape))).astype(np.float32)
    assert not np.array_equal(nudge, vec)
    with _fill(tmp_path / "main") as s:
        s.put_vectors(["v"], vec)
        s.put_scalars(["x", "small"], [3.0, 1e-3])
    with _fill(tmp_path / "w") as s:
        s.put_vectors(["v", "new"], np.concatenate([nudge, vec]))
        s.put_scalars(["x", "small"], [3.0 * (1 + 1e-7), 1e-3 + 1e-9])
    before = store_rows(tmp_path / "main")
    stats = merge_store(tmp_path / "w", tmp_path / "main", "m")
    assert (stats.added, stats.present, stats.close) == (1, 0, 3)
    want = max(
        float(np.linalg.norm(nudge.astype(np.float64) - vec) / np.linalg.norm(vec)),
        abs(3.0 * (1 + 1e-7) - 3.0) / 3.0,
        1e-9,  # |a - b| / max(|b|, 1) for a value below 1
    )
    assert stats.max_deviation == pytest.approx(want, rel=1e-6)
    assert 1e-9 < stats.max_deviation < MERGE_RTOL
    after = store_rows(tmp_path / "main")
    assert {k: after[k] for k in before} == before  # the main store's values kept


@pytest.mark.parametrize(
    ("main", "worker", "why"),
    [
        ("vectors", np.full((1, 3), 1.001), "relative deviation 0.001"),
        ("vectors", np.ones((1, 4)), "another size"),
        ("scalars", [1.0 + 1e-4], "relative deviation 0.0001"),
        ("records", [{"answer": "(2)"}], "another value"),
    ],
)
def test_a_real_conflict_names_both_files_and_the_key_and_merges_nothing_of_the_file(
    tmp_path: Path, main: str, worker: object, why: str
) -> None:
    first = {"vectors": np.ones((1, 3)), "scalars": [1.0], "records": [{"answer": "(1)"}]}
    with _fill(tmp_path / "main") as s:
        getattr(s, f"put_{main}")(["k1"], first[main])
    with _fill(tmp_path / "w") as s:
        getattr(s, f"put_{main}")(["k1"], worker)
        s.put_scalars(["k0"], [5.0])  # a row the main store lacks: not merged either
    before = store_rows(tmp_path / "main")
    src = tmp_path / "w" / "embeddings" / "m.sqlite"
    dest = tmp_path / "main" / "embeddings" / "m.sqlite"
    with pytest.raises(StoreConflict) as info:
        merge_store(tmp_path / "w", tmp_path / "main", "m", remove=True)
    text = str(info.value)
    assert f"{src}: key k1 ({main} of model m)" in text and str(dest) in text and why in text
    assert f"rm {src}" in text  # the one command that resolves it
    assert (info.value.key, info.value.src, info.value.dest) == ("k1", src, dest)
    assert store_rows(tmp_path / "main") == before  # nothing of the file merged, k0 neither
    assert src.is_file()  # left for the next merge


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
    stats = merge_store(tmp_path / "w", tmp_path / "main", "m")
    assert (stats.damaged, stats.added) == (1, 1)
    with RequestStore(tmp_path / "main", "m", readonly=True) as main:
        assert main.get_vectors(["k1"])["k1"].tolist() == [2.0, 2.0]  # the sound row
        assert main.get_vectors(["k2"]) == {}  # the damaged one left out


def test_a_file_of_another_model_is_refused(tmp_path: Path) -> None:
    with _fill(tmp_path / "w", "m") as s:
        s.put_scalars(["x"], [1.0])
    (tmp_path / "w" / "embeddings" / "m.sqlite").rename(tmp_path / "w" / "embeddings" / "n.sqlite")
    with pytest.raises(Exception, match=r"belongs to model key 'm', not 'n'"):
        merge_store(tmp_path / "w", tmp_path / "main", "n")


def test_a_worker_file_that_cannot_be_read_says_how_to_drop_it(tmp_path: Path) -> None:
    src = tmp_path / "w" / "embeddings" / "m.sqlite"
    src.parent.mkdir(parents=True)
    src.write_bytes(b"not a database at all")
    with pytest.raises(CacheError, match=rf"not an SQLite database.*rm {src}$"):
        merge_store(tmp_path / "w", tmp_path / "main", "m", remove=True)
    assert src.is_file() and store_rows(tmp_path / "main") == {}


def _a_vector(out: Path) -> tuple[Path, str, np.ndarray]:
    """The model's store file a job left in `out/stores/`, and one of its vectors."""
    for file in sorted((out / "stores").glob("*/embeddings/*.sqlite")):
        with RequestStore(
            file.parent.parent, file.name.removesuffix(".sqlite"), readonly=True
        ) as s:
            keys = sorted(key for table, key in s.rows() if table == "vectors")
            if keys:
                return file, keys[0], s.get_vectors(keys[:1])[keys[0]]
    raise AssertionError("no vectors stored")


def _conflicting_sweep(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A per-job sweep of one job, then a value of its worker's store changed beyond the
    tolerance in the main store (nothing else merged): the grid, the sweep folder and the
    worker file left to merge."""
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a"])
    grid.write_text(grid.read_text().replace(', "synthetic/replace_att"', ""))
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as mp:  # keep the worker's store: merge nothing
        mp.setattr("lexsem.sweep.runner.merge_job_stores", lambda *a, **k: {})
        assert run_sweep(grid, out, stores="per-job").complete
    worker, first, vec = _a_vector(out)
    key = worker.name.removesuffix(".sqlite")
    with RequestStore(tmp_path / "cache", key) as main:
        main.put_vectors([first], (vec * 1.01)[None])
    return grid, out, worker


def test_a_sweep_reports_a_conflict_keeps_the_file_and_merges_once_it_is_resolved(
    tmp_path: Path,
) -> None:
    grid, out, worker = _conflicting_sweep(tmp_path)
    key = worker.name.removesuffix(".sqlite")

    def rows_of(model_key: str) -> dict[tuple[str, str, str], tuple[int, bytes]]:
        return {k: v for k, v in store_rows(tmp_path / "cache").items() if k[0] == model_key}

    main_before = rows_of(key)
    res = CliRunner().invoke(app, ["sweep", str(grid), "-o", str(out)])
    assert res.exit_code == 1, res.output
    assert f"{worker}: key " in res.output and f"rm {worker}" in res.output
    assert rows_of(key) == main_before  # nothing of that file merged
    assert list(worker.parent.glob("*.sqlite")) == [worker]  # left, the merged one removed
    assert rows_of("bootstrap-intervals")  # the job's other store file merged, and kept
    again = run_sweep(grid, out)  # a rerun retries it: the same conflict
    assert not again.complete and again.merge["conflicts"] == 1
    shard = run_sweep(grid, out, "shard", rank=0, world_size=1)  # merges nothing: its jobs done
    assert shard.complete and shard.merge == {}
    worker.unlink()  # the command the error names: keep the main store's value
    done = CliRunner().invoke(app, ["sweep", str(grid), "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert not any((out / "stores").iterdir())
    assert run_sweep(grid, out).complete


def test_a_worker_store_merged_within_tolerance_records_the_deviation(tmp_path: Path) -> None:
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a"])
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("lexsem.sweep.runner.merge_job_stores", lambda *a, **k: {})
        assert run_sweep(grid, out, stores="per-job").complete
    worker, first, vec = _a_vector(out)
    key = worker.name.removesuffix(".sqlite")
    with RequestStore(tmp_path / "cache", key) as main:
        main.put_vectors([first], (vec * (1 + 2e-7))[None])
    lines: list[str] = []
    res = run_sweep(grid, out, echo=lines.append)
    assert res.complete and res.merge["close"] >= 1
    assert 0 < res.merge["max_deviation"] < MERGE_RTOL
    assert any("largest deviation" in line for line in lines), lines
    assert not any((out / "stores").iterdir())

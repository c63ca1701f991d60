"""A job's workers start from what the main request store knows (a read-only snapshot of the
job's model store and of the bootstrap intervals, shipped with the job) and compute only what
is missing: a fully cached grid encodes nothing, on `local` with per-job stores and on Ray,
and sends no store back; a killed worker's temporary store is removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.sweep_folders import local_ray, same_runs, write_grid
from lexsem.engine.request_store import RequestStore, store_keys, store_rows, store_snapshot
from lexsem.sweep.grid import expand, load_grid
from lexsem.sweep.job_run import TMP_PREFIX, remove_stale_stores, store_seed
from lexsem.sweep.runner import run_sweep


def _calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _grid(tmp_path: Path, log: Path) -> Path:
    models = [f"sweepfake:a?calls_log={log}", f"sweepfake:b?dim=16&calls_log={log}"]
    return write_grid(tmp_path / "g.toml", tmp_path / "cache", models)


def test_a_snapshot_is_the_store_read_only(tmp_path: Path) -> None:
    import numpy as np

    with RequestStore(tmp_path / "main", "m1") as store:
        store.put_vectors(["k1", "k2"], np.eye(2, dtype=np.float32))
        store.put_scalars(["s"], [0.5])
    data = store_snapshot(tmp_path / "main", "m1")
    copy = tmp_path / "copy" / "embeddings"
    copy.mkdir(parents=True)
    (copy / "m1.sqlite").write_bytes(data)
    assert store_rows(tmp_path / "copy") == store_rows(tmp_path / "main")
    assert store_snapshot(tmp_path / "main", "absent") == b""
    assert not (tmp_path / "main" / "embeddings" / "absent.sqlite").exists()


def test_per_job_stores_start_from_the_main_store(tmp_path: Path) -> None:
    """A warm cache: the per-job stores hold it already, the encoder is not called and no
    store is kept for merging; the runs are those of the shared store."""
    log = tmp_path / "calls.log"
    grid = _grid(tmp_path, log)
    assert run_sweep(grid, tmp_path / "shared", stores="shared").complete
    cold = _calls(log)
    assert cold > 0
    job = expand(load_grid(grid))[0]
    seed = store_seed(job)
    assert len(seed) == 2  # the model's store and the bootstrap intervals'
    rows = store_rows(tmp_path / "cache")
    res = run_sweep(grid, tmp_path / "per-job", stores="per-job")
    assert res.complete and _calls(log) == cold  # nothing encoded again
    assert res.merge["files"] == 0  # nothing added: no store sent back
    assert store_rows(tmp_path / "cache") == rows
    same_runs(tmp_path / "shared", tmp_path / "per-job")


def test_a_partly_cached_job_sends_back_what_it_added(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    grid = _grid(tmp_path, log)
    one = write_grid(tmp_path / "one.toml", tmp_path / "cache", [f"sweepfake:a?calls_log={log}"])
    run_sweep(one, tmp_path / "one")  # model a cached, model b not
    before = _calls(log)
    res = run_sweep(grid, tmp_path / "out", stores="per-job")
    assert res.complete and res.merge["files"] >= 1 and res.merge["added"] > 0
    new = log.read_text().splitlines()[before:]
    assert new and {line.split()[0] for line in new} == {"b"}  # model a's texts were known
    after = _calls(log)
    rerun = run_sweep(grid, tmp_path / "again", stores="per-job")
    assert rerun.complete and _calls(log) == after and rerun.merge["files"] == 0


def test_the_folder_of_a_killed_worker_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = tmp_path / f"{TMP_PREFIX}{int(dead.stdout)}-job-x1"
    live = tmp_path / f"{TMP_PREFIX}{os.getpid()}-job-x2"
    other = tmp_path / "lexsem-job-notapid"
    for folder in (stale, live, other):
        (folder / "embeddings").mkdir(parents=True)
    assert remove_stale_stores(tmp_path) == [stale]
    assert not stale.exists() and live.exists() and other.exists()


ray = pytest.importorskip("ray") if not os.environ.get("CI") else __import__("ray")


def test_a_warm_cache_on_ray_encodes_nothing(tmp_path: Path) -> None:
    """After a local sweep, the same grid on Ray (per-job stores) calls no encoder, sends no
    store back, merges nothing and gives the local run folders."""
    log = tmp_path / "calls.log"
    grid = _grid(tmp_path, log)
    assert run_sweep(grid, tmp_path / "local").complete
    cold, keys = _calls(log), store_keys(tmp_path / "cache")
    with local_ray():
        res = run_sweep(grid, tmp_path / "ray", "ray")
    assert res.complete and {j.executor for j in res.jobs} == {"ray"}
    assert _calls(log) == cold
    assert res.merge["files"] == 0 and store_keys(tmp_path / "cache") == keys
    assert not (tmp_path / "ray" / "stores").exists() or not any(
        (tmp_path / "ray" / "stores").iterdir()
    )
    same_runs(tmp_path / "local", tmp_path / "ray")

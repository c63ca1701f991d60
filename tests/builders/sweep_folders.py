"""Sweep folders and grids for tests: the deterministic contents of a sweep's run folders (to
compare executors), and a grid of tiny models written to a file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from builders.golden_items import compare_tables
from builders.numeric import FP32_RTOL, relative_error
from lexsem.results.run_folder import load_items, load_run
from lexsem.sweep.grid import EXECUTION_FIELDS

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
# what a run record says of when, how long and where: not the evaluation's outcome
NOT_DETERMINISTIC = ("created_at", "timings", "environment")


def run_contents(out: Path) -> dict[str, tuple[dict[str, Any], pa.Table]]:
    """job id -> (its run record without timings, time and host fields, its per-item table)."""
    found = {}
    for folder in sorted((out / "runs").iterdir()):
        record = load_run(folder).model_dump(mode="json")
        for key in NOT_DETERMINISTIC:
            record.pop(key)
        for key in EXECUTION_FIELDS:
            record["config"]["evaluation"].pop(key)
        found[folder.name] = (record, load_items(folder))
    return found


def same_runs(a: Path, b: Path) -> list[str]:
    """Assert two sweep folders hold the same runs, record by record and item by item, under
    the tolerance rule of docs/testing.md: they come from different processes (Ray workers,
    spread actors, shards), whose kernels may round the last bits differently. Ids, hits, ties
    and texts are exact, scores within `FP32_RTOL`; a fragile flip (two scores that tie) is
    returned, and then that run's results may differ by the flipped items alone."""
    left, right = run_contents(a), run_contents(b)
    assert sorted(left) == sorted(right)
    flips: list[str] = []
    for job_id, (record, items) in left.items():
        other_record, other_items = right[job_id]
        job_flips = compare_tables(other_items, items, job_id)
        if job_flips:
            record, other_record = dict(record), dict(other_record)
            record.pop("results"), other_record.pop("results")
        assert_same_record(other_record, record, job_id)
        flips += job_flips
    return flips


def assert_same_record(got: Any, want: Any, where: str) -> None:
    """Two run records (JSON values) are equal, floats within `FP32_RTOL` of max(|want|, 1)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{where}: keys differ"
        for key in want:
            assert_same_record(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: lengths differ"
        for n, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_record(g, w, f"{where}[{n}]")
    elif isinstance(want, float) and not isinstance(got, bool) and isinstance(got, float | int):
        error = float(relative_error(np.float64(got), np.float64(want), scale=1.0))
        assert error <= FP32_RTOL, f"{where}: {got!r} != {want!r} (relative error {error:.3g})"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def same_store_rows(
    got: dict[tuple[str, str, str], tuple[int, bytes]],
    want: dict[tuple[str, str, str], tuple[int, bytes]],
) -> None:
    """Two request stores' rows (`store_rows`) hold the same keys; the vectors and scalars
    within `FP32_RTOL` (relative to each vector's norm, or to max(|value|, 1)); records exact."""
    assert sorted(got) == sorted(want), "the stores hold different keys"
    for key, (n, blob) in want.items():
        other_n, other_blob = got[key]
        assert other_n == n, f"{key}: size {other_n} != {n}"
        table = key[1]
        if table == "records":
            assert other_blob == blob, f"{key}: the records differ"
            continue
        dtype = np.float32 if table == "vectors" else np.float64
        a, b = np.frombuffer(other_blob, dtype), np.frombuffer(blob, dtype)
        if table == "vectors":
            error = float(np.linalg.norm(a - b) / max(float(np.linalg.norm(b)), 1e-30))
        else:
            error = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0), initial=0.0))
        assert error <= FP32_RTOL, f"{key}: relative error {error:.3g} > {FP32_RTOL:g}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a lexsem subprocess: this checkout's src and the tests' builders."""
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS)])
    return env


def write_grid(path: Path, cache: Path, models: list[str], **defaults: Any) -> Path:
    """A grid of `models` on two selections of the synthetic benchmark, `cache` its cache."""
    settings = {"n_boot": 20, "cache_dir": str(cache), **defaults}
    lines = ['plugins = ["builders.sweep_models"]', "[defaults]"]
    lines += [f"{k} = {_toml(v)}" for k, v in settings.items()]
    lines += [
        "[groups]",
        f"fakes = {_toml(models)}",
        "[[block]]",
        'groups = ["fakes"]',
        'benchmarks = ["synthetic/swap_obj", "synthetic/replace_att"]',
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


@contextmanager
def local_ray() -> Iterator[None]:
    """A local Ray of 2 CPUs whose workers import this checkout and the tests' builders."""
    import ray

    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS)])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved

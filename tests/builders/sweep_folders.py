"""Sweep folders and grids for tests: the deterministic contents of a sweep's run folders (to
compare executors), and a grid of tiny models written to a file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

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


def same_runs(a: Path, b: Path) -> None:
    """Assert two sweep folders hold the same runs, record by record and item by item."""
    left, right = run_contents(a), run_contents(b)
    assert sorted(left) == sorted(right)
    for job_id, (record, items) in left.items():
        other_record, other_items = right[job_id]
        assert record == other_record, job_id
        assert items.equals(other_items), job_id


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

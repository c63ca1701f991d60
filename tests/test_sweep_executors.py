"""The same grid through the `local`, `shard` (two real processes, RANK/WORLD_SIZE) and `ray`
(`ray.init(num_cpus=2)`) executors gives the same run folders; a Ray worker lost mid-sweep is
retried, or its job reported and run alone by the next sweep, whose merged store then equals
the store of a sweep never interrupted. A new executor (docs/extending.md's `reverse`, of the
example plugin package) is one file and one registry line, and gives the run folders of
`local`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.example_plugin import ROOT, SOURCE, package_modules, registry_line
from builders.sweep_folders import (
    local_ray,
    same_runs,
    same_store_rows,
    subprocess_env,
    write_grid,
)
from lexsem.cli.app import app
from lexsem.engine.request_store import store_rows
from lexsem.sweep.executors import EXECUTORS
from lexsem.sweep.executors.base import Executor
from lexsem.sweep.executors.shard import rank_and_world, shard_slice
from lexsem.sweep.grid import Grid, expand, load_grid
from lexsem.sweep.runner import run_sweep

ray = pytest.importorskip("ray") if not os.environ.get("CI") else __import__("ray")

REVERSE = SOURCE / "reverse.py"
REGISTRY_LINE = 'EXECUTORS.add("reverse", '


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    with local_ray():
        yield


def _shards(grid: Path, out: Path, world: int = 2) -> None:
    cmd = [sys.executable, "-c", "from lexsem.cli import app; app()", "sweep", str(grid)]
    procs = [
        subprocess.Popen(
            [*cmd, "-o", str(out), "--executor", "shard", "-q"],
            env=subprocess_env(RANK=str(rank), WORLD_SIZE=str(world)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(world)
    ]
    for p in procs:
        _, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr


@pytest.mark.torch
def test_local_shard_and_ray_give_the_same_run_folders(
    tmp_path: Path, minilm_path: Path, ray_cluster: None
) -> None:
    models = ["minilm", "sweepfake:a", "sweepfake:b?dim=16"]
    grids = {
        ex: write_grid(tmp_path / f"{ex}.toml", tmp_path / f"cache-{ex}", models)
        for ex in ("local", "shard", "ray")
    }
    assert run_sweep(grids["local"], tmp_path / "local").complete
    _shards(grids["shard"], tmp_path / "shard")
    res = run_sweep(grids["ray"], tmp_path / "ray", "ray")
    assert res.complete and {j.executor for j in res.jobs} == {"ray"}
    same_runs(tmp_path / "local", tmp_path / "shard")
    same_runs(tmp_path / "local", tmp_path / "ray")
    # ray's per-job stores were merged into the main store: the same values as local's
    same_store_rows(store_rows(tmp_path / "cache-ray"), store_rows(tmp_path / "cache-local"))
    assert not any((tmp_path / "ray" / "stores").iterdir())
    # the shards' summaries: every job done by one of two ranks
    final = run_sweep(grids["shard"], tmp_path / "shard")
    assert [j.status for j in final.jobs] == ["skipped"] * 6
    assert len({j.worker for j in final.jobs}) == 1


def test_shards_split_the_jobs_deterministically() -> None:
    grid = Grid(blocks=[{"models": ["a", "b", "c"], "benchmarks": ["synthetic", "sugarcrepe"]}])
    jobs = expand(grid)
    parts = [shard_slice(jobs, r, 4) for r in range(4)]
    assert sorted(j.id for p in parts for j in p) == sorted(j.id for j in jobs)
    assert [len(p) for p in parts] == [1, 2, 1, 2]
    assert parts[0][0].config.benchmarks == ("synthetic",)  # grouped by data
    assert rank_and_world(env={"RANK": "1", "WORLD_SIZE": "4"}) == (1, 4)
    slurm = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"}
    assert rank_and_world(env=slurm) == (2, 4)
    assert rank_and_world(0, 2, env={"RANK": "1", "WORLD_SIZE": "4"}) == (0, 2)
    with pytest.raises(Exception, match=r"rank 4 of world size 4"):
        rank_and_world(env={"RANK": "4", "WORLD_SIZE": "4"})


def test_a_lost_ray_worker_is_retried(tmp_path: Path, ray_cluster: None) -> None:
    marker = tmp_path / "crash.marker"
    models = ["sweepfake:a", f"sweepfake:b?crash_marker={marker}"]
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", models)
    res = run_sweep(grid, tmp_path / "out", "ray", max_retries=1)
    assert marker.exists()  # a worker was killed
    assert res.complete, [j.error for j in res.jobs]


def test_a_ray_sweep_whose_worker_died_reruns_only_that_job(
    tmp_path: Path, ray_cluster: None
) -> None:
    marker = tmp_path / "crash.marker"
    models = ["sweepfake:a", f"sweepfake:b?crash_marker={marker}"]
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", models)
    res = run_sweep(grid, tmp_path / "out", "ray", max_retries=0)
    lost = [j for j in res.jobs if j.status == "failed"]
    assert len(lost) == 1 and lost[0].error.startswith("Ray: ")
    assert lost[0].model.startswith("sweepfake:b")
    again = run_sweep(grid, tmp_path / "out", "ray", max_retries=0)
    assert again.complete
    assert [j.status for j in again.jobs if j.status == "done"] == ["done"]
    assert {j.id for j in again.jobs if j.status == "done"} == {lost[0].id}
    whole = write_grid(tmp_path / "w.toml", tmp_path / "cache2", models)
    assert run_sweep(whole, tmp_path / "out2", "ray").complete
    same_runs(tmp_path / "out", tmp_path / "out2")
    same_store_rows(store_rows(tmp_path / "cache"), store_rows(tmp_path / "cache2"))


def test_the_doc_shows_the_executor_example() -> None:
    doc = (ROOT / "docs" / "extending.md").read_text()
    assert f"# {REVERSE.relative_to(ROOT)}\n{REVERSE.read_text()}" in doc
    assert f"`{registry_line(REGISTRY_LINE)}`" in doc


@pytest.fixture
def example_modules() -> Iterator[None]:
    with package_modules():
        yield


def test_a_new_executor_is_one_file_and_one_registry_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example_modules: None
) -> None:
    """docs/extending.md's `reverse` executor (the example plugin's file), registered by the
    plugin's registry line in a module a grid names in its `plugins`, runs a sweep end to end
    from the command line: its jobs in reverse order, the run folders and the store of the
    `local` executor."""
    (tmp_path / "register_reverse.py").write_text(
        f"from lexsem.sweep.executors import EXECUTORS\n\n{registry_line(REGISTRY_LINE)}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(EXECUTORS, "_entries", dict(EXECUTORS._entries))
    monkeypatch.setattr(EXECUTORS, "_loaded", {})
    monkeypatch.delitem(sys.modules, "register_reverse", raising=False)
    models = ["sweepfake:a", "sweepfake:b?dim=16"]
    grids = {
        ex: write_grid(tmp_path / f"{ex}.toml", tmp_path / f"cache-{ex}", models)
        for ex in ("local", "reverse")
    }
    text = grids["reverse"].read_text()
    grids["reverse"].write_text(
        text.replace('"builders.sweep_models"', '"builders.sweep_models", "register_reverse"')
    )
    assert "reverse" not in EXECUTORS
    assert run_sweep(grids["local"], tmp_path / "local").complete
    res = CliRunner().invoke(
        app, ["sweep", str(grids["reverse"]), "-o", str(tmp_path / "rev"), "--executor", "reverse"]
    )
    assert res.exit_code == 0, res.output
    assert isinstance(EXECUTORS.get("reverse"), Executor)
    order = [line.split()[1] for line in res.stderr.splitlines() if line.startswith("done ")]
    assert order == [job.id for job in reversed(expand(load_grid(grids["reverse"])))]
    same_runs(tmp_path / "local", tmp_path / "rev")
    same_store_rows(store_rows(tmp_path / "cache-reverse"), store_rows(tmp_path / "cache-local"))
    again = run_sweep(grids["reverse"], tmp_path / "rev", "reverse")
    assert [j.status for j in again.jobs] == ["skipped"] * 4
    assert {j.executor for j in again.jobs} == {"reverse"}

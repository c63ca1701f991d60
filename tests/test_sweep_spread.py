"""One job's encoding spread over Ray actors (`resources.spread`, `lexsem sweep --spread` with
`--executor ray`) gives the run folders and the request store of one process, within the
tolerance rule of docs/testing.md (`same_runs`, `same_store_rows`): the real offline MiniLM
(texts) and a tiny random open_clip (images and captions), on `ray.init(num_cpus=2)`; an actor
killed mid-encoding is restarted and its unit retried, with the same result; a run that would
still encode anything after the spread is a failed job; `local` and `shard` refuse a spread
job before any work."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.sweep_folders import local_ray, same_runs, same_store_rows
from lexsem.cli.app import app
from lexsem.engine.plan import Plan
from lexsem.engine.request_store import RequestStore, store_rows
from lexsem.engine.runner import TEXT
from lexsem.engine.units import UNIT_BATCHES, Encoding, UnitEncoder, batch_ranges
from lexsem.errors import LexsemError
from lexsem.sweep.grid import Grid, expand
from lexsem.sweep.runner import run_sweep, with_spread
from lexsem.sweep.spread import SpreadStats, run_spread_job

ray = pytest.importorskip("ray") if not os.environ.get("CI") else __import__("ray")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    with local_ray():
        yield


def _grid(cache: Path, model: str, spread: int, **defaults: Any) -> Grid:
    settings = {"n_boot": 20, "cache_dir": str(cache), "batch_size": 4, **defaults}
    return Grid(
        plugins=["builders.sweep_models"],
        defaults=settings,
        blocks=[
            {
                "models": [model],
                "benchmarks": ["synthetic/swap_obj"],
                "resources": {"spread": spread},
            }
        ],
    )


def _spread_and_one_process(tmp_path: Path, model: str, **defaults: Any) -> list[str]:
    """Run `model` in one process and spread over 2 actors; assert the same run folders and
    the same store rows; the spread's progress lines."""
    lines: list[str] = []
    one = run_sweep(_grid(tmp_path / "c1", model, 1, **defaults), tmp_path / "one")
    assert one.complete, [j.error for j in one.jobs]
    spread = run_sweep(
        _grid(tmp_path / "c2", model, 2, **defaults), tmp_path / "spread", "ray",
        echo=lines.append,
    )  # fmt: skip
    assert spread.complete, [j.error for j in spread.jobs]
    same_runs(tmp_path / "one", tmp_path / "spread")
    same_store_rows(store_rows(tmp_path / "c2"), store_rows(tmp_path / "c1"))
    return lines


# -- units of whole batches ---------------------------------------------------------------------
@pytest.mark.parametrize("n_batches", [0, 1, 3, 8, 9, 100])
@pytest.mark.parametrize("workers", [1, 2, 5])
def test_units_cover_the_batches_in_order(n_batches: int, workers: int) -> None:
    ranges = batch_ranges(n_batches, workers)
    assert [i for r in ranges for i in r] == list(range(n_batches))
    assert all(0 < len(r) <= UNIT_BATCHES for r in ranges)
    assert len(ranges) >= min(workers, n_batches)


class _Encoder:
    """A text encoder of 3 dimensions (its batches: every `batch_size`, in order)."""

    name, fingerprint = "fake", {"backend": "fake"}

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.array([[len(t), 1.0, 0.0] for t in texts], np.float32)


def test_text_units_keep_one_process_batches_and_fill_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lexsem.engine.units.CHUNK", 10)
    texts = [f"text {'x' * (i % 7)} {i}" for i in range(30)]
    model = _Encoder()
    enc = Encoding(model, {TEXT}, Plan(texts=texts), tmp_path, batch_size=4, workers=3,
                   images=lambda: None)  # fmt: skip
    enc.store.put_vectors(enc.units().__next__().keys[:2], np.ones((2, 3), np.float32))
    enc = Encoding(model, {TEXT}, Plan(texts=texts), tmp_path, batch_size=4, workers=3,
                   images=lambda: None)  # fmt: skip
    units, compute = list(enc.units()), UnitEncoder(model)
    assert enc.n_texts_missing == 28
    chunks = list(dict.fromkeys(u.keys for u in units))
    assert [len(c) for c in chunks] == [10, 10, 8]
    for c in chunks:  # every batch of the chunk in one unit, in order
        parts = [u.part for u in units if u.keys == c]
        assert [b for r in parts for b in r] == list(range(-(-len(c) // 4)))  # type: ignore[union-attr]
    assert all(enc.fill(u, compute(u.shared, u.part)) for u in units)
    assert enc.n_texts_encoded == 28
    enc.close()
    assert list(Encoding(model, {TEXT}, Plan(texts=texts), tmp_path, batch_size=4, workers=3,
                         images=lambda: None).units()) == []  # fmt: skip
    assert len(RequestStore(tmp_path, enc.key).get_vectors(list(c for c in chunks[0]))) == 10


# -- one process against two actors -------------------------------------------------------------
@pytest.mark.torch
@pytest.mark.numeric  # also on the portable kernels, one thread (make test's kernel-path run)
def test_minilm_spread_over_two_actors_is_one_process(
    tmp_path: Path, minilm_path: Path, ray_cluster: None
) -> None:
    lines = _spread_and_one_process(tmp_path, "minilm")
    assert any(line.startswith("spread ") and " 0 texts" not in line for line in lines), lines


@pytest.mark.torch
@pytest.mark.numeric
def test_an_open_clip_spread_over_two_actors_is_one_process(
    tmp_path: Path, ray_cluster: None
) -> None:
    from builders.tiny_dual_models import write_tiny_openclip

    spec = write_tiny_openclip(tmp_path / "clip", "tiny-spread")
    lines = _spread_and_one_process(tmp_path, spec)
    assert any(" 0 images" not in line for line in lines if line.startswith("spread ")), lines


def test_an_actor_killed_mid_encoding_is_retried_with_the_same_result(
    tmp_path: Path, ray_cluster: None
) -> None:
    marker = tmp_path / "crash.marker"
    model = f"sweepfake:a?crash_marker={marker}"
    marker.touch()  # the one-process run: the marker exists, nothing is killed
    assert run_sweep(_grid(tmp_path / "c1", model, 1), tmp_path / "one").complete
    marker.unlink()
    res = run_sweep(_grid(tmp_path / "c2", model, 2), tmp_path / "spread", "ray", max_retries=1)
    assert marker.exists()  # an actor killed itself mid-encoding
    assert res.complete, [j.error for j in res.jobs]
    same_runs(tmp_path / "one", tmp_path / "spread")
    same_store_rows(store_rows(tmp_path / "c2"), store_rows(tmp_path / "c1"))


def test_an_actor_lost_more_often_than_retried_fails_its_job_alone(
    tmp_path: Path, ray_cluster: None
) -> None:
    marker = tmp_path / "crash.marker"
    grid = _grid(tmp_path / "c", f"sweepfake:a?crash_marker={marker}", 2)
    res = run_sweep(grid, tmp_path / "out", "ray", max_retries=0)
    (job,) = res.jobs
    assert job.status == "failed" and "spread worker was lost" in (job.error or "")
    assert run_sweep(grid, tmp_path / "out", "ray").complete  # the rerun finishes it


# -- checks -------------------------------------------------------------------------------------
def test_a_run_that_still_encodes_after_the_spread_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (job,) = expand(_grid(tmp_path / "c", "sweepfake:a", 2))
    monkeypatch.setattr("lexsem.sweep.spread.spread_encode", lambda *a, **k: SpreadStats(workers=2))
    status = run_spread_job(job, tmp_path / "out", spread=2)
    assert status.status == "failed"
    assert (status.error or "").startswith("the spread encoding left ") and "texts" in status.error
    assert not (tmp_path / "out" / "runs").exists()


def test_spread_settings_are_bounded_and_need_the_store(tmp_path: Path) -> None:
    jobs = expand(_grid(tmp_path / "c", "sweepfake:a", 1))
    assert [j.resources.spread for j in with_spread(jobs, 3)] == [3]
    with pytest.raises(LexsemError, match="spread must be from 1 to 1024"):
        with_spread(jobs, 0)
    with pytest.raises(LexsemError, match=r"block 1: .*spread needs the request store"):
        expand(_grid(tmp_path / "c", "sweepfake:a", 2, use_cache=False))
    grid = tmp_path / "g.toml"
    grid.write_text('[[block]]\nmodels = ["sweepfake:a"]\nbenchmarks = ["synthetic"]\n'
                    "resources = { spread = 0 }\n")  # fmt: skip
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["sweep", str(grid), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "resources.spread" in res.stderr, res.output
    res = CliRunner().invoke(app, ["sweep", str(grid), "-o", str(tmp_path / "o"), "--spread", "0"])
    assert res.exit_code == 2 and "--spread" in res.output


@pytest.mark.parametrize("executor", ["local", "shard"])
def test_an_executor_that_does_not_spread_refuses_a_spread_job_before_any_work(
    tmp_path: Path, executor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray started"))
    grid = _grid(tmp_path / "c", "sweepfake:a", 2)
    shard = {"rank": 0, "world_size": 1} if executor == "shard" else {}
    said = rf"resources.spread = 2: the {executor} executor does not spread .*--executor ray"
    with pytest.raises(LexsemError, match=said):
        run_sweep(grid, tmp_path / "out", executor, **shard)
    assert not (tmp_path / "out").exists()
    assert run_sweep(grid, tmp_path / "out", executor, spread=1, **shard).complete  # unspread


def test_a_spread_that_will_not_pay_says_why(tmp_path: Path, ray_cluster: None) -> None:
    """Two CPU actors and the driver on a Ray of 2 CPUs: a warning, and the job still runs."""
    grid = _grid(tmp_path / "c", "sweepfake:a", 2)
    cores = r"needs 3 cores with the driver; the Ray cluster has 2: they share them"
    with pytest.warns(RuntimeWarning, match=f"spread encoding will not pay here: .*{cores}"):
        assert run_sweep(grid, tmp_path / "out", "ray").complete

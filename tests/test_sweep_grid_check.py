"""A grid is checked whole before any work: an unknown model, backend, option, local path,
benchmark, subset or task, or a task the model cannot run, is listed — all of them at once,
each once, with did-you-mean — by `--dry-run` and by a real run, which exit non-zero and run
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.sweep_folders import write_grid
from lexsem.cli.app import app
from lexsem.sweep.grid import expand, load_grid
from lexsem.sweep.grid_check import GridError, grid_mistakes
from lexsem.sweep.runner import run_sweep

runner = CliRunner()


def _bad_grid(tmp_path: Path) -> Path:
    grid = tmp_path / "bad.toml"
    grid.write_text(
        f"""plugins = ["builders.sweep_models"]
[defaults]
cache_dir = "{tmp_path / "cache"}"
n_boot = 0
[[block]]
models = ["minlm", "nosuchbackend:x", "sweepfake:a?dimm=3", "hf:{tmp_path / "no-such-folder"}",
          "sweepfake:a", "sweepfake:b"]
benchmarks = ["synthetc", "synthetic/swap_objs", "synthetic"]
[[block]]
models = ["sweepfake:a"]
benchmarks = ["synthetic"]
options = {{ tasks = ["tott"] }}
[[block]]
models = ["sweepfake:a"]
benchmarks = ["synthetic"]
options = {{ tasks = ["itt"] }}
"""
    )
    return grid


EXPECTED = [
    r"model 'minlm': unknown model 'minlm' \(did you mean 'minilm'\?\)",
    r"model 'nosuchbackend:x': unknown model backend 'nosuchbackend'",
    r"model 'sweepfake:a\?dimm=3': .*'dimm'.*did you mean 'dim'",
    r"model 'hf:.*no-such-folder'",
    r"benchmark 'synthetc': unknown benchmark 'synthetc' \(did you mean 'synthetic'\?\)",
    r"benchmark 'synthetic/swap_objs': .*no subset 'swap_objs' \(did you mean 'swap_obj'\?\)",
    r"model 'sweepfake:a' on 'synthetic': .*task 'tott' \(did you mean 'tot'\?\)",
    r"model 'sweepfake:a' on 'synthetic': this model cannot run task 'itt'",
]


def test_every_mistake_is_listed_once(tmp_path: Path) -> None:
    import re

    mistakes = grid_mistakes(expand(load_grid(_bad_grid(tmp_path))))
    assert len(mistakes) == len(EXPECTED), "\n".join(mistakes)
    for pattern in EXPECTED:
        found = [line for line in mistakes if re.search(pattern, line)]
        assert len(found) == 1, f"{pattern!r}: {found or mistakes}"


def test_a_good_grid_has_no_mistake(tmp_path: Path) -> None:
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a", "sweepfake:b"])
    assert grid_mistakes(expand(load_grid(grid))) == []


@pytest.mark.parametrize("dry", [True, False])
def test_the_cli_refuses_the_grid_before_any_work(tmp_path: Path, dry: bool) -> None:
    out = tmp_path / "out"
    args = ["sweep", str(_bad_grid(tmp_path)), "-o", str(out)] + (["--dry-run"] if dry else [])
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "the grid has 8 mistakes; no job was run" in res.stderr
    assert "did you mean 'minilm'" in res.stderr and "did you mean 'swap_obj'" in res.stderr
    assert not out.exists()  # nothing written, no job started
    with pytest.raises(GridError) as info:
        run_sweep(_bad_grid(tmp_path), out, dry_run=dry)
    assert len(info.value.mistakes) == 8

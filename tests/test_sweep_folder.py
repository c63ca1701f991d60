"""One sweep folder, one grid: another grid is refused unless `--extend`; two sweeps on one
folder at once, the second stops with a message; `sweep.json` is true at every moment (a
sweep killed with SIGKILL leaves the jobs that ended with their status, the rest pending);
Ctrl-C says what is kept and the command that resumes; the final line counts honestly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.sweep_folders import subprocess_env, write_grid
from lexsem.cli.app import app
from lexsem.errors import LexsemError
from lexsem.sweep.executors import local
from lexsem.sweep.grid import expand, load_grid
from lexsem.sweep.runner import run_sweep

runner = CliRunner()


def _statuses(out: Path) -> dict[str, str]:
    doc = json.loads((out / "sweep.json").read_text())
    return {j["id"]: j["status"] for j in doc["jobs"]}


def test_another_grid_is_refused_unless_extending(tmp_path: Path) -> None:
    grid_a = write_grid(tmp_path / "a.toml", tmp_path / "cache", ["sweepfake:a"])
    grid_b = write_grid(tmp_path / "b.toml", tmp_path / "cache", ["sweepfake:b"])
    out = tmp_path / "out"
    assert run_sweep(grid_a, out).complete
    for dry in (False, True):
        res = runner.invoke(app, ["sweep", str(grid_b), "-o", str(out)] + ["--dry-run"] * dry)
        assert res.exit_code == 2, res.output
        assert "holds the sweep of another grid (2 jobs; 2 of them are not in this grid" in (
            res.stderr
        )
        assert "--extend" in res.stderr and res.stderr.count("\n") == 1
    assert len(list((out / "runs").iterdir())) == 2  # nothing of grid b ran
    res = runner.invoke(app, ["sweep", str(grid_b), "-o", str(out), "--extend", "-q"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("2 done; ")  # grid b's jobs, not the folder's
    ids_a = [j.id for j in expand(load_grid(grid_a))]
    ids_b = [j.id for j in expand(load_grid(grid_b))]
    assert list(_statuses(out)) == ids_a + ids_b  # the folder lists both grids' jobs
    assert len(json.loads((out / "sweep.json").read_text())["grids"]) == 2
    # either grid runs again on the folder now without --extend: both are its grids
    again = runner.invoke(app, ["sweep", str(grid_a), "-o", str(out), "-q"])
    assert again.exit_code == 0 and again.stdout.startswith("2 already done; "), again.output
    assert set(_statuses(out).values()) == {"skipped", "done"}


def test_a_killed_sweep_leaves_a_true_summary_and_its_lock_refuses_a_second(
    tmp_path: Path,
) -> None:
    """While the first sweep hangs in its second job: sweep.json shows the first job done and
    the others pending, and a second sweep of the folder stops at once. After SIGKILL the
    summary is still true and the lock gone: the folder runs again."""
    marker = tmp_path / "hang.marker"
    models = ["sweepfake:a", f"sweepfake:b?hang_marker={marker}"]
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", models)
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from lexsem.cli import app; app()", "sweep", str(grid)]
    proc = subprocess.Popen([*cmd, "-o", str(out)], env=subprocess_env(), stderr=subprocess.PIPE)
    jobs = [j.id for j in expand(load_grid(grid))]
    first = jobs[0]
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the sweep never reached its hanging job"
            time.sleep(0.1)
        statuses = _statuses(out)
        assert statuses[first] == "done"
        assert sorted(statuses.values()) == ["done", "pending", "pending", "pending"]
        second = runner.invoke(app, ["sweep", str(grid), "-o", str(out)])
        assert second.exit_code == 2, second.output
        assert "another lexsem sweep is running on this folder" in second.stderr
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    statuses = _statuses(out)
    assert statuses[first] == "done" and list(statuses.values()).count("pending") == 3
    res = run_sweep(grid, out)  # the lock went with the process
    assert res.complete and [j.status for j in res.jobs] == ["skipped", "done", "done", "done"]


def test_ctrl_c_says_what_is_kept_and_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a", "sweepfake:b"])
    out = tmp_path / "out dir"
    real = local.run_job
    calls: list[int] = []

    def second_is_interrupted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(local, "run_job", second_is_interrupted)
    res = runner.invoke(app, ["sweep", str(grid), "-o", str(out), "-q"])
    assert res.exit_code == 130, res.output
    assert "interrupted: the runs of 1 of 4 jobs are kept in" in res.stderr
    assert "3 jobs left, pending in" in res.stderr
    assert f"To resume (the jobs done are skipped): lexsem sweep {grid} -o '{out}'" in res.stderr
    monkeypatch.setattr(local, "run_job", real)
    resumed = run_sweep(grid, out)
    assert [j.status for j in resumed.jobs].count("skipped") == 1 and resumed.complete


def test_the_final_line_counts_what_happened(tmp_path: Path) -> None:
    models = ["sweepfake:a", "sweepfake:bad?fail=1"]
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", models)
    out = tmp_path / "out"
    first = runner.invoke(app, ["sweep", str(grid), "-o", str(out), "-q"])
    assert first.exit_code == 1 and first.stdout.startswith("2 done, 2 failed; "), first.output
    again = runner.invoke(app, ["sweep", str(grid), "-o", str(out), "-q"])
    assert again.stdout.startswith("2 already done, 2 failed; "), again.output


def test_a_shard_and_a_whole_run_never_share_a_folder(tmp_path: Path) -> None:
    from lexsem.sweep.record import sweep_lock

    out = tmp_path / "out"
    out.mkdir()
    busy = "another lexsem sweep is running"
    with sweep_lock(out, rank=0):
        with sweep_lock(out, rank=1):  # shards of one sweep run together
            pass
        for rank in (None, 0):  # a whole run, the same shard again
            with pytest.raises(LexsemError, match=busy), sweep_lock(out, rank=rank):
                pass
    with sweep_lock(out), pytest.raises(LexsemError, match=busy), sweep_lock(out, rank=0):
        pass

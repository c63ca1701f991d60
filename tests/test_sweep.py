"""`lexsem sweep` with the local executor: one run folder per job, jobs done skipped, a
failing job reported without stopping the others, a killed sweep resumed with only what is
left (its store then equal to an uninterrupted sweep's), `lexsem report SWEEP`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from builders.sweep_folders import run_contents, same_runs, subprocess_env, write_grid
from lexsem.cli.app import app
from lexsem.engine.request_store import store_rows
from lexsem.errors import LexsemError
from lexsem.sweep.grid import expand, load_grid
from lexsem.sweep.runner import run_sweep

runner = CliRunner()


def test_a_sweep_runs_every_job_and_skips_what_is_done(tmp_path: Path) -> None:
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a", "sweepfake:b"])
    res = run_sweep(grid, tmp_path / "out")
    assert [j.status for j in res.jobs] == ["done"] * 4 and res.complete
    jobs = expand(load_grid(grid))
    assert sorted(p.name for p in (tmp_path / "out" / "runs").iterdir()) == sorted(
        j.id for j in jobs
    )
    summary = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert [j["status"] for j in summary["jobs"]] == ["done"] * 4
    assert [g["block"][0]["groups"] for g in summary["grids"]] == [["fakes"]]
    before = run_contents(tmp_path / "out")
    again = run_sweep(grid, tmp_path / "out")
    assert [j.status for j in again.jobs] == ["skipped"] * 4
    assert run_contents(tmp_path / "out").keys() == before.keys()


def test_a_changed_model_is_not_done(tmp_path: Path) -> None:
    """Done means: the same settings and the same model fingerprint in the run folder."""
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a"])
    run_sweep(grid, tmp_path / "out")
    job = expand(load_grid(grid))[0]
    run_json = tmp_path / "out" / "runs" / job.id / "run.json"
    doc = json.loads(run_json.read_text())
    doc["model"]["fingerprint"]["dim"] = 99  # as if the weights had changed since
    run_json.write_text(json.dumps(doc))
    res = run_sweep(grid, tmp_path / "out")
    assert [j.status for j in res.jobs] == ["done", "skipped"]


def test_a_failing_job_is_reported_and_the_others_run(tmp_path: Path) -> None:
    models = ["sweepfake:a", "sweepfake:bad?fail=1", "sweepfake:c"]
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", models)
    res = run_sweep(grid, tmp_path / "out")
    assert [j.status for j in res.jobs] == ["done", "done", "failed", "failed", "done", "done"]
    assert res.failed[0].error == "RuntimeError: sweepfake: told to fail"
    assert not res.complete
    out = runner.invoke(app, ["sweep", str(grid), "-o", str(tmp_path / "out")])
    assert out.exit_code == 1  # the failures again (the done jobs skipped)
    assert "4 already done, 2 failed" in out.stdout
    assert "failed: sweepfake-bad-fail-1__synthetic-swap-obj__" in out.stderr
    assert "told to fail" in out.stderr


def test_the_cli_runs_a_grid_and_report_tabulates_the_sweep(tmp_path: Path) -> None:
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a", "sweepfake:b"])
    out = tmp_path / "out"
    dry = runner.invoke(app, ["sweep", str(grid), "-o", str(out), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "4 of 4 jobs to run" in dry.stdout and not out.exists()
    done = runner.invoke(app, ["sweep", str(grid), "-o", str(out), "-q"])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("4 done; ")
    table = runner.invoke(app, ["report", str(out)])
    assert table.exit_code == 0, table.output
    folders = [str(out / "runs" / job.id) for job in expand(load_grid(grid))]
    by_folders = runner.invoke(app, ["report", *folders])
    assert table.stdout == by_folders.stdout  # the sweep folder stands for its runs
    assert "sweepfake:a" in table.stdout and "sweepfake:b" in table.stdout
    dry = runner.invoke(app, ["sweep", str(grid), "-o", str(out), "--dry-run"])
    assert "0 of 4 jobs to run" in dry.stdout


def test_cli_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "SLURM_ARRAY_TASK_ID", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", ["sweepfake:a"])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    cases = [
        (["sweep", str(tmp_path / "nope.toml"), "-o", str(tmp_path / "o")], "cannot read"),
        (["sweep", str(grid), "-o", str(tmp_path / "notes")], "holds files but no sweep"),
        (["sweep", str(grid), "-o", str(grid)], "not a folder"),
        (["sweep", str(grid), "-o", str(tmp_path / "o"), "--executor", "shard"], "--rank"),
    ]
    for args, message in cases:
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    bad = runner.invoke(app, ["sweep", str(grid), "-o", str(tmp_path / "o"), "--executor", "x"])
    assert bad.exit_code == 2 and "unknown executor 'x'; known: local, ray, shard" in bad.stderr
    with pytest.raises(LexsemError, match=r"unknown executor 'locl' \(did you mean 'local'\?\)"):
        run_sweep(grid, tmp_path / "o", "locl")
    assert not (tmp_path / "o").exists()  # refused before any work


def test_a_killed_sweep_resumes_with_only_what_is_left(tmp_path: Path) -> None:
    """SIGKILL of the sweep process while its second job runs (the jobs of one benchmark
    selection run together: a on swap_obj, then b): the first job's run folder is kept, the
    rerun runs only the rest, and the store then equals that of a sweep that
    was never interrupted."""
    marker = tmp_path / "hang.marker"
    models = ["sweepfake:a", f"sweepfake:b?hang_marker={marker}"]
    grid = write_grid(tmp_path / "g.toml", tmp_path / "cache", models)
    cmd = [sys.executable, "-c", "from lexsem.cli import app; app()", "sweep", str(grid)]
    proc = subprocess.Popen(
        [*cmd, "-o", str(tmp_path / "out")], env=subprocess_env(), stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the sweep never reached its hanging job"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    runs = sorted(p.name for p in (tmp_path / "out" / "runs").iterdir())
    first = expand(load_grid(grid))[0]
    assert runs == [first.id] and first.config.benchmarks == ("synthetic/swap_obj",)
    res = run_sweep(grid, tmp_path / "out")  # the marker exists: job b runs normally now
    assert [j.status for j in res.jobs] == ["skipped", "done", "done", "done"]
    # an uninterrupted sweep of the same models (b's marker already there: no hang)
    whole = write_grid(tmp_path / "w.toml", tmp_path / "cache2", models)
    assert run_sweep(whole, tmp_path / "out2").complete
    same_runs(tmp_path / "out", tmp_path / "out2")
    assert store_rows(tmp_path / "cache") == store_rows(tmp_path / "cache2")
    assert len(store_rows(tmp_path / "cache")) > 0

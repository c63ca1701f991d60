"""Names people can read: a job's id says its model, benchmarks with their subsets and the
values its block varies; `lexsem report OUT` names a sweep's rows by the model and the varied
values (`sweepfake:a tie_policy=lenient`) and lists the failed jobs with their reasons, in
the text report (stderr) and in the HTML page."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

import builders.sweep_models  # noqa: F401  (registers the sweepfake: backend here)
from lexsem.cli.app import app
from lexsem.sweep.grid import expand, load_grid
from lexsem.sweep.runner import run_sweep

runner = CliRunner()


def _grid(tmp_path: Path) -> Path:
    grid = tmp_path / "g.toml"
    grid.write_text(
        f"""plugins = ["builders.sweep_models"]
[defaults]
cache_dir = "{tmp_path / "cache"}"
n_boot = 0
[[block]]
models = ["sweepfake:a", "sweepfake:bad?fail=1"]
benchmarks = ["synthetic/swap_obj,replace_att"]
vary = {{ tie_policy = ["strict", "lenient"] }}
"""
    )
    return grid


def test_job_ids_say_the_subsets_and_the_varied_values(tmp_path: Path) -> None:
    ids = [job.id for job in expand(load_grid(_grid(tmp_path)))]
    assert [i.rsplit("__", 1)[0] for i in ids] == [
        "sweepfake-a__synthetic-swap-obj-replace-att__tie_policy=strict",
        "sweepfake-a__synthetic-swap-obj-replace-att__tie_policy=lenient",
        "sweepfake-bad-fail-1__synthetic-swap-obj-replace-att__tie_policy=strict",
        "sweepfake-bad-fail-1__synthetic-swap-obj-replace-att__tie_policy=lenient",
    ]
    assert all(re.fullmatch(r"[0-9a-f]{12}", i.rsplit("__", 1)[1]) for i in ids)
    assert len(set(ids)) == 4


def test_the_report_of_a_sweep_names_rows_and_lists_failures(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_sweep(_grid(tmp_path), out)
    assert [j.status for j in res.jobs] == ["done", "done", "failed", "failed"]
    text = runner.invoke(app, ["report", str(out)])
    assert text.exit_code == 0, text.output
    rows = {line.split("|")[1].strip() for line in text.stdout.splitlines() if "|" in line}
    assert {"sweepfake:a tie_policy=strict", "sweepfake:a tie_policy=lenient"} <= rows
    assert not any(re.search(r"\([0-9a-f]{8}\)", r) for r in rows)  # no hash needed
    assert "2 of 4 jobs have no run (2 failed, 0 not run yet)" in text.stderr
    failed = [line for line in text.stderr.splitlines() if line.startswith("failed: ")]
    assert len(failed) == 2 and all("sweepfake: told to fail" in line for line in failed)
    page = tmp_path / "r.html"
    html = runner.invoke(app, ["report", str(out), "--html", str(page), "--n-boot", "0"])
    assert html.exit_code == 0, html.output
    body = page.read_text().replace("<wbr>", "")  # soft breaks in long names
    assert "Sweep jobs without a run" in body
    assert body.count("RuntimeError: sweepfake: told to fail") == 2
    assert "sweepfake:a tie_policy=lenient" in body

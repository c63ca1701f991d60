"""The command line, end to end (a thin layer over the API)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from lexsem.cli import app

runner = CliRunner()


def test_list_commands() -> None:
    out = runner.invoke(app, ["list", "benchmarks"])
    assert out.exit_code == 0, out.output
    assert "sugarcrepe_pp" in out.output and "swap_obj (245)" in out.output
    out = runner.invoke(app, ["list", "tasks"])
    assert "t2t" in out.output and "p1n" in out.output
    out = runner.invoke(app, ["list", "models"])
    assert out.exit_code == 0 and "minilm" in out.output


def test_eval_then_report(tmp_path: Path, minilm_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = runner.invoke(
        app,
        [
            "eval",
            "-m",
            "minilm",
            "-b",
            "synthetic",
            "-o",
            str(run_dir),
            "--n-boot",
            "100",
            "--device",
            "cpu",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "| model |" in out.output and "swap_att" in out.output
    record = json.loads((run_dir / "run.json").read_text())
    assert record["benchmarks"][0]["name"] == "synthetic"
    assert (run_dir / "items.parquet").exists()

    md = runner.invoke(app, ["report", str(run_dir), "--ci"])
    assert md.exit_code == 0, md.output
    assert "### synthetic — TOT" in md.output and "[" in md.output
    csv_out = runner.invoke(app, ["report", str(run_dir), "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(csv_out.output)))
    micro = [r for r in rows if r["column"] == "micro"]
    assert len(micro) == 1
    acc = next(r["accuracy"] for r in record["results"] if r["subset"] == "_micro")
    assert float(micro[0]["value"]) == round(acc, 2)

    # the tables need only the run record: a run.json on its own is enough, said on stderr
    alone = tmp_path / "alone" / "run.json"
    alone.parent.mkdir()
    alone.write_bytes((run_dir / "run.json").read_bytes())
    md_alone = runner.invoke(app, ["report", str(alone), "--ci"])
    assert md_alone.exit_code == 0, md_alone.output
    assert md_alone.stdout == md.stdout
    assert md_alone.stderr.startswith(f"warning: {alone.parent / 'items.parquet'}: no per-item")


def test_errors_are_one_line_with_status_2(tmp_path: Path) -> None:
    out = runner.invoke(app, ["eval", "-m", "minilm", "-b", "nope", "-o", str(tmp_path / "r")])
    assert out.exit_code == 2
    assert "error: unknown benchmark 'nope'" in out.output
    out = runner.invoke(app, ["eval", "-m", "bogus:thing", "-b", "synthetic"])
    assert out.exit_code == 2 and "error:" in out.output
    out = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert out.exit_code == 2 and "no such run file" in out.output


def test_validate_visla_spatial(test_data_dir: Path, tmp_path: Path) -> None:
    out = runner.invoke(
        app,
        [
            "validate",
            "visla_spatial",
            "--data-dir",
            str(test_data_dir),
            "--json",
            str(tmp_path / "h.json"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "652" in out.output and "640" in out.output and "636" in out.output
    report = json.loads((tmp_path / "h.json").read_text())
    assert report["benchmark"] == "visla_spatial"


def test_download_generated_benchmark_needs_nothing(tmp_path: Path) -> None:
    out = runner.invoke(app, ["download", "synthetic", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "nothing to download" in out.output

"""One command per kind of model: tiny random models built in the tests, loaded from a folder
through the normal spec strings, evaluated end to end by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.tiny_dual_models import write_clip
from builders.tiny_itm_models import write_tiny_blip
from builders.tiny_text_scorers import write_tiny_gpt2
from lexsem.cli import app

pytestmark = pytest.mark.torch

runner = CliRunner()


def _eval(tmp_path: Path, spec: str, bench: str) -> dict:
    out = tmp_path / "run"
    res = runner.invoke(
        app,
        [
            "eval",
            "-m",
            spec,
            "-b",
            bench,
            "-o",
            str(out),
            "--n-boot",
            "0",
            "--device",
            "cpu",
            "--num-workers",
            "0",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    return json.loads((out / "run.json").read_text())


def test_dual_encoder_runs_text_and_image_tasks(tmp_path: Path) -> None:
    folder = write_clip(tmp_path / "clip")
    rec = _eval(tmp_path, f"clip:{folder}", "synthetic/swap_att")
    assert rec["config"]["tasks"] == ["itt", "tot"]
    metrics = {r["metric"] for r in rec["results"]}
    assert {"tot", "itt", "itt_p1n", "itt_p2n"} <= metrics
    assert rec["timings"]["n_images_unique"] == 100
    assert rec["model"]["fingerprint"]["family"] == "clip"


def test_itm_head_runs_bidirectional_quads(tmp_path: Path) -> None:
    folder = write_tiny_blip(tmp_path / "blip")
    rec = _eval(tmp_path, f"itm:{folder}", "synthetic_bi/replace_rel")
    assert rec["config"]["tasks"] == ["bivlc"]
    assert {"group", "i2t", "t2i"} <= {r["metric"] for r in rec["results"]}
    assert rec["timings"]["n_pairs_unique"] == 400  # 100 quads x 4 (image, caption) pairs


def test_causal_lm_runs_blind_baseline(tmp_path: Path) -> None:
    folder = write_tiny_gpt2(tmp_path / "gpt2")
    rec = _eval(tmp_path, f"lm:{folder}", "synthetic/replace_obj")
    assert rec["config"]["tasks"] == ["blind"]
    (acc,) = [r for r in rec["results"] if r["subset"] == "replace_obj"]
    assert acc["n"] == 100 and 0.0 <= acc["accuracy"] <= 100.0


@pytest.mark.parametrize("spec", ["itm:/nonexistent/folder", "lm:"])
def test_bad_specs_are_clear(spec: str) -> None:
    res = runner.invoke(app, ["eval", "-m", spec, "-b", "synthetic"])
    assert res.exit_code == 2 and "error:" in res.output

"""`lexsem train` settings out of range (or NaN / infinite) are one `error:` line naming the
option, the value given and what is allowed; nothing is loaded or written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexsem.cli import app

BAD = {
    "lr-negative": (["--lr", "-1"], "--lr -1.0: must be greater than 0"),
    "lr-nan": (["--lr", "nan"], "--lr nan: must be a finite number (allowed: more than 0)"),
    "lr-inf": (["--lr", "inf"], "--lr inf: must be a finite number"),
    "weight-decay-negative": (["--weight-decay", "-1"], "--weight-decay -1.0: must be greater"),
    "epochs-0": (["--epochs", "0"], "--epochs 0: must be greater than or equal to 1"),
    "lora-r-0": (["--lora", "c_fc", "--lora-r", "0"], "--lora-r 0: must be greater than or"),
    "lora-alpha-inf": (["--lora", "c_fc", "--lora-alpha", "inf"], "--lora-alpha inf: must be a"),
    "val-fraction": (
        ["--select", "val_in_batch_acc", "--val-fraction", "1.5"],
        "--val-fraction 1.5: must be less than 1 (allowed: more than 0, less than 1)",
    ),
}


def _train(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    res = CliRunner().invoke(app, ["train", "--manifest", str(tmp_path / "m.jsonl"), "-o",
                                   str(tmp_path / "run"), "-m", "openclip:x", *args])  # fmt: skip
    return res.exit_code, res.output.strip().splitlines()


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_setting_is_one_line_naming_option_value_and_range(tmp_path: Path, case: str) -> None:
    args, message = BAD[case]
    code, lines = _train(tmp_path, *args)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: invalid training settings: ") and message in lines[0]
    assert not (tmp_path / "run").exists()


def test_an_unknown_precision_names_the_choices(tmp_path: Path) -> None:
    code, lines = _train(tmp_path, "--precision", "fp8")
    text = " ".join(lines)
    assert code == 2 and "'fp8'" in text and "amp_bf16" in text and "Traceback" not in text


def test_nan_and_inf_are_refused_for_every_float_field() -> None:
    from pydantic import ValidationError

    from lexsem.train.config import LoraConfig, TrainConfig

    base = {"model": "openclip:x", "manifest": "m.jsonl", "out": "o"}
    for name in ("lr", "weight_decay", "eps", "val_fraction"):
        for bad in (float("nan"), float("inf")):
            extra = {"select": "val_in_batch_acc"} if name == "val_fraction" else {}
            with pytest.raises(ValidationError, match="finite"):
                TrainConfig(**base, **extra, **{name: bad})
    with pytest.raises(ValidationError, match="finite"):
        TrainConfig(**base, betas=(0.9, float("nan")))
    for name in ("alpha", "dropout"):
        with pytest.raises(ValidationError, match="finite"):
            LoraConfig(targets=("c_fc",), **{name: float("inf")})

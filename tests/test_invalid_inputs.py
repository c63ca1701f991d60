"""Invalid options and unusable model files are clear errors before any work
(docs/reliability.md, "Invalid options and model files")."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from builders.privileges import where_permission_bits_apply
from lexsem import evaluate
from lexsem.cli import app
from lexsem.errors import LexsemError, ModelError
from lexsem.models.integrity import check_model_files

runner = CliRunner()


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("work was done before the invalid input was refused")


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a model or a benchmark fails the test."""
    monkeypatch.setattr("lexsem.models.factory.load_model", _never)
    monkeypatch.setattr("lexsem.evaluator.load_benchmark", _never)


def _one_line_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.count("error:") == 1
    for needle in needles:
        assert needle in result.output, result.output


@pytest.mark.parametrize(
    "option,needle",
    [
        (["--batch-size", "0"], "--batch-size 0: must be greater than or equal to 1"),
        (["--n-boot", "-5"], "--n-boot -5: must be greater than or equal to 0"),
        (["--num-workers", "-1"], "--num-workers -1: must be greater than or equal to 0"),
    ],
)
def test_invalid_options_are_one_line_and_status_2_before_any_work(
    option: list[str], needle: str, no_work: None, tmp_path: Path
) -> None:
    out = runner.invoke(
        app, ["eval", "-m", "minilm", "-b", "synthetic", *option, "-o", str(tmp_path / "r")]
    )
    _one_line_error(out, "invalid evaluation settings", needle)
    assert not (tmp_path / "r").exists()
    with pytest.raises(LexsemError, match="invalid evaluation settings"):
        evaluate("minilm", ["synthetic"], **{option[0][2:].replace("-", "_"): int(option[1])})


# -- model files ------------------------------------------------------------------------------


def _safetensors(path: Path) -> None:
    from safetensors.numpy import save_file

    save_file({"w": np.ones((16, 8), np.float32), "b": np.zeros(8, np.float32)}, str(path))


def _model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    _safetensors(folder / "model.safetensors")
    return folder


def test_a_damaged_weight_file_is_refused_before_any_benchmark_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _model_folder(tmp_path)
    weights = folder / "model.safetensors"
    check_model_files(folder, [weights])  # whole: fine
    weights.write_bytes(weights.read_bytes()[:-100])  # cut short (a download that stopped)
    monkeypatch.setattr("lexsem.evaluator.load_benchmark", _never)
    want = rf"the model file {weights} is damaged \(its tensors end at byte \d+, the file has"
    with pytest.raises(ModelError, match=want):
        evaluate(f"st:{folder}", ["synthetic"], n_boot=0)
    out = runner.invoke(
        app, ["eval", "-m", f"st:{folder}", "-b", "synthetic", "-o", str(tmp_path / "r")]
    )
    _one_line_error(out, f"error: the model file {weights} is damaged")


@pytest.mark.parametrize("name", ["model.safetensors", "vocab.txt"])  # read by integrity, source
@where_permission_bits_apply
def test_an_unreadable_model_file_is_named(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _model_folder(tmp_path)
    (folder / "vocab.txt").write_text("[PAD]\n")
    (folder / name).chmod(0)
    monkeypatch.setattr("lexsem.evaluator.load_benchmark", _never)
    try:
        assert not os.access(folder / name, os.R_OK)
        with pytest.raises(ModelError, match=rf"cannot read the model file {folder / name}: Perm"):
            evaluate(f"hf:{folder}", ["synthetic"], n_boot=0)
    finally:
        (folder / name).chmod(0o644)


@pytest.mark.torch
def test_git_lfs_pointers_and_cut_torch_checkpoints_are_refused(tmp_path: Path) -> None:
    lfs = tmp_path / "pytorch_model.bin"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 4\n")
    with pytest.raises(ModelError, match=r"pytorch_model\.bin is a Git LFS pointer"):
        check_model_files(tmp_path, [lfs])
    ckpt = tmp_path / "w.pt"
    with zipfile.ZipFile(ckpt, "w") as zf:  # the layout of torch.save
        zf.writestr("w/data.pkl", b"\x80\x02" + bytes(4000))
    check_model_files(ckpt, [ckpt])
    ckpt.write_bytes(ckpt.read_bytes()[:-60])
    with pytest.raises(ModelError, match=r"w\.pt is damaged \(a cut-short or broken zip"):
        check_model_files(ckpt, [ckpt])
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(ModelError, match=r"config\.json is not valid JSON"):
        check_model_files(tmp_path, [])


@pytest.mark.parametrize(
    "name", ["preprocessor_config.json", "tokenizer.json", "1_Pooling/config.json"]
)
def test_every_json_file_of_a_model_folder_is_checked_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A damaged image-processor config failed only at the first image, after every text was
    encoded; a damaged tokenizer.json with a message naming no file."""
    folder = _model_folder(tmp_path)
    (folder / name).parent.mkdir(exist_ok=True)
    (folder / name).write_text('{"do_resize": true, "size": ')  # cut short
    monkeypatch.setattr("lexsem.evaluator.load_benchmark", _never)
    with pytest.raises(ModelError, match=rf"the model file {folder / name} is not valid JSON"):
        evaluate(f"hf:{folder}", ["synthetic"], n_boot=0)
    out = runner.invoke(
        app, ["eval", "-m", f"hf:{folder}", "-b", "synthetic", "-o", str(tmp_path / "r")]
    )
    _one_line_error(out, f"error: the model file {folder / name} is not valid JSON")

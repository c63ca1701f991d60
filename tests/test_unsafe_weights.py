"""A weights file whose pickle would run code (a `pytorch_model.bin` made with a `__reduce__`
payload) is refused before any work, in one line naming the file: nothing in it runs, and no
loader's traceback is shown (`lexsem.models.integrity`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.backends import optional_import
from lexsem.cli import app
from lexsem.errors import ModelError
from lexsem.models.integrity import check_model_files, check_safe_pickles

torch = optional_import("torch")
pytestmark = pytest.mark.torch


class Payload:
    """Unpickling it would create `marker` (a shell command run by `os.system`)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _planted(path: Path, marker: Path) -> Path:
    torch.save({"w": torch.zeros(2), "evil": Payload(marker)}, path)
    return path


def test_a_code_running_pickle_is_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for name in ("pytorch_model.bin", "model.pt", "open_clip_model.pth"):
        f = _planted(tmp_path / name, marker)
        with pytest.raises(ModelError, match="not a safe weights file") as err:
            check_safe_pickles([f])
        assert str(f) in str(err.value) and "system" in str(err.value)
    assert not marker.exists()
    plain = tmp_path / "plain.bin"
    torch.save({"w": torch.zeros(2)}, plain)
    check_model_files(plain, [plain])
    check_safe_pickles([plain])  # an ordinary checkpoint passes


def test_eval_of_a_clip_folder_with_a_planted_pickle_is_one_line(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from builders.tiny_dual_models import write_clip

    folder = write_clip(tmp_path / "clip")
    weights: dict[str, Any] = {}
    for f in folder.glob("*.safetensors"):
        weights.update(load_file(f))
        f.unlink()
    marker = tmp_path / "ran"
    torch.save({**weights, "evil": Payload(marker)}, folder / "pytorch_model.bin")
    for spec in (f"clip:{folder}",):
        res = CliRunner().invoke(app, ["eval", "-m", spec, "-b", "synthetic",
                                       "-o", str(tmp_path / "run"), "-q"])  # fmt: skip
        assert res.exit_code == 2, res.output
        assert res.output.startswith("error: the model file ") and "Traceback" not in res.output
        assert len(res.output.strip().splitlines()) == 1, res.output
        assert f"{folder / 'pytorch_model.bin'} is not a safe weights file" in res.output
    assert not marker.exists() and not (tmp_path / "run").exists()

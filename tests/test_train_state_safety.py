"""`state.pt` is read as tensors and plain values only (`lexsem.train.state.read_state`):
a planted pickle never runs, as a whole file or as one object inside a real state, and a
damaged file is one error line naming it — through the loader and `lexsem train --resume`."""

from __future__ import annotations

import builtins
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

from lexsem.errors import DataError

pytestmark = pytest.mark.torch


class Planted:
    """Unpickling this calls `open(marker, "w")`: the file appears if the pickle runs."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (builtins.open, (str(self.marker), "w"))


def _real_state(path: Path) -> None:
    from lexsem.train.optim import adamw, cosine_with_warmup
    from lexsem.train.state import Progress, save_state

    m = torch.nn.Linear(3, 2)
    opt = adamw(m, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.98), eps=1e-6)
    save_state(path, m, opt, cosine_with_warmup(opt, 1, 10), Progress(step=2))


def _plain_pickle(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(Planted(marker)))


def _inside_a_real_state(path: Path, marker: Path) -> None:
    _real_state(path)
    state = torch.load(path, weights_only=True)
    state["extra"] = Planted(marker)
    torch.save(state, path)


PLANTS = {"plain-pickle": _plain_pickle, "inside-a-real-state": _inside_a_real_state}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_pickle_never_runs(tmp_path: Path, plant: str) -> None:
    from lexsem.train.state import read_state

    state, marker = tmp_path / "state.pt", tmp_path / "ran"
    PLANTS[plant](state, marker)
    assert not marker.exists()
    with pytest.raises(DataError) as err:
        read_state(state)
    message = str(err.value)
    assert str(state) in message and "\n" not in message and "refused" in message
    assert not marker.exists()


def test_a_real_state_round_trips_with_weights_only(tmp_path: Path) -> None:
    """Every part of a state (optimizer, schedule, scaler, the random generators) is read back
    with `weights_only=True`, and the generators continue where they were."""
    import random

    import numpy as np

    from lexsem.train.optim import adamw, cosine_with_warmup
    from lexsem.train.state import Progress, load_state, save_state

    m = torch.nn.Linear(3, 2)
    opt = adamw(m, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.98), eps=1e-6)
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    sched = cosine_with_warmup(opt, 1, 10)
    sched.step()
    scaler = torch.amp.GradScaler("cpu", init_scale=512.0)
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.standard_normal()  # a cached gaussian in numpy's state
    path = tmp_path / "state.pt"
    save_state(path, m, opt, sched, Progress(step=5, losses=[{"step": 1, "loss": 0.5}]), scaler)
    torch.load(path, weights_only=True)  # nothing but tensors and plain values
    expected = (random.random(), np.random.standard_normal(), torch.rand(1))
    m2 = torch.nn.Linear(3, 2)
    opt2 = adamw(m2, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.98), eps=1e-6)
    sched2, scaler2 = cosine_with_warmup(opt2, 1, 10), torch.amp.GradScaler("cpu")
    progress = load_state(path, m2, opt2, sched2, scaler2)
    assert progress.step == 5 and progress.losses == [{"step": 1, "loss": 0.5}]
    assert torch.equal(m.weight, m2.weight) and sched2.last_epoch == sched.last_epoch
    assert scaler2.get_scale() == 512.0
    assert opt2.state_dict()["state"][0]["exp_avg"].equal(opt.state_dict()["state"][0]["exp_avg"])
    again = (random.random(), np.random.standard_normal(), torch.rand(1))
    assert again[:2] == expected[:2] and torch.equal(again[2], expected[2])


DAMAGED = {
    "truncated": lambda real: real[: len(real) // 2],
    "text": lambda real: b"this is a text file, not a state\n",
    "empty": lambda real: b"",
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_state_is_one_line_naming_it(tmp_path: Path, damage: str) -> None:
    from lexsem.train.state import read_state

    path = tmp_path / "state.pt"
    _real_state(path)
    path.write_bytes(DAMAGED[damage](path.read_bytes()))
    with pytest.raises(DataError) as err:
        read_state(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def _resume(tmp_path: Path) -> Any:
    from typer.testing import CliRunner

    from lexsem.cli import app

    args = ["train", "--manifest", str(tmp_path / "m.jsonl"), "-o", str(tmp_path / "run"),
            "-m", "openclip:ViT-B-32/openai", "--resume"]  # fmt: skip
    return CliRunner().invoke(app, args)


@pytest.mark.parametrize("case", ["plain-pickle", "inside-a-real-state", "truncated", "text"])
def test_train_resume_refuses_a_planted_or_damaged_state_in_one_line(
    tmp_path: Path, case: str
) -> None:
    """`lexsem train --resume` reads `state.pt` before loading anything: one `error:` line
    naming it, exit status 2, and a planted pickle never runs."""
    out, marker = tmp_path / "run", tmp_path / "ran"
    out.mkdir()
    (out / "train.json").write_text(json.dumps({"config": {}}))
    state = out / "state.pt"
    if case in PLANTS:
        PLANTS[case](state, marker)
    else:
        _real_state(state)
        state.write_bytes(DAMAGED[case](state.read_bytes()))
    res = _resume(tmp_path)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(state) in lines[0]
    assert not marker.exists()

"""The resumable state of a training run (`state.pt` in its folder), written atomically: the
module's and the optimizer's and schedule's states, where the run is (epoch, batches of the
epoch done, optimizer steps), the loss curve so far, the per-epoch evaluations, the fp16
gradient scaler's state, and the random generators. A run resumed from it reads the same
batches in the same order (their order is a function of the seed and the epoch:
`lexsem.train.batches`) and ends at the same weights as an uninterrupted run."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.atomic import atomic_path
from lexsem.errors import DataError

__all__ = ["Progress", "load_state", "save_state"]


@dataclass
class Progress:
    epoch: int = 0  # the epoch under way
    batch: int = 0  # micro-batches of that epoch done
    step: int = 0  # optimizer steps done
    losses: list[dict[str, float]] = field(default_factory=list)  # per optimizer step
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # per epoch
    validations: list[dict[str, Any]] = field(default_factory=list)  # per epoch: in-batch acc
    best: dict[str, Any] | None = None  # the selected epoch


def save_state(
    path: Path, module: Any, optimizer: Any, schedule: Any, progress: Progress, scaler: Any = None
) -> None:
    import torch

    state = {
        "module": module.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "progress": asdict(progress),
        "scaler": scaler.state_dict() if scaler is not None else None,
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                "python": random.getstate()},
    }  # fmt: skip
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_state(
    path: Path, module: Any, optimizer: Any, schedule: Any, scaler: Any = None
) -> Progress:
    """Restore the state at `path` into the objects (and the fp16 gradient scaler's); the
    `Progress` it had."""
    import torch

    if not path.is_file():
        raise DataError(f"nothing to resume: {path} does not exist (the run never saved a state)")
    state = torch.load(path, map_location="cpu", weights_only=False)
    module.load_state_dict(state["module"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    rng = state["rng"]
    torch.set_rng_state(rng["torch"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["python"])
    return Progress(**state["progress"])

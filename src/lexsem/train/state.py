"""The resumable state of a training run (`state.pt` in its folder), written atomically: the
module's and the optimizer's and schedule's states, where the run is (epoch, batches of the
epoch done, optimizer steps), the loss curve so far, the per-epoch evaluations, the fp16
gradient scaler's state, and the random generators. A run resumed from it reads the same
batches in the same order (their order is a function of the seed and the epoch:
`lexsem.train.batches`) and ends at the same weights as an uninterrupted run.

The file holds tensors and plain values only (the random generators' states as tensors, ints
and tuples), and is read with `torch.load(..., weights_only=True)`: a `state.pt` that holds
any other object (a pickle that would run code when loaded) is refused with one line naming
it, and nothing in it runs."""

from __future__ import annotations

import pickle
import random
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.atomic import atomic_path
from lexsem.errors import DataError

__all__ = ["Progress", "load_state", "read_state", "restore_state", "save_state"]

#: The keys every `state.pt` has.
STATE_KEYS = ("module", "optimizer", "schedule", "progress", "scaler", "rng")


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
        "rng": _rng_state(),
    }
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def _rng_state() -> dict[str, Any]:
    """The random generators' states as tensors and plain values (what `weights_only` reads):
    torch's CPU generator, each CUDA device's (when CUDA is in use), numpy's global generator
    (its Mersenne Twister key as a tensor), Python's `random` (a tuple of ints)."""
    import torch

    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": str(kind), "keys": torch.from_numpy(np.asarray(keys, np.int64)),
                  "pos": int(pos), "has_gauss": int(has_gauss), "cached": float(cached)},
        "python": random.getstate(),
    }  # fmt: skip
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(rng: dict[str, Any]) -> None:
    import torch

    torch.set_rng_state(rng["torch"])
    n = rng["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state((n["kind"], keys, n["pos"], n["has_gauss"], n["cached"]))
    version, internal, gauss = rng["python"]
    random.setstate((version, tuple(internal), gauss))
    cuda = rng.get("cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)


def read_state(path: Path) -> dict[str, Any]:
    """The state saved at `path`, read with `weights_only=True` (tensors and plain values;
    nothing else is unpickled, so nothing in the file runs) and checked for its keys; a
    one-line `DataError` naming the file when it is missing, damaged or holds anything else."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise DataError(f"nothing to resume: {path} does not exist (the run never saved a state)")
    try:
        with warnings.catch_warnings():  # torch's notes on the pickle protocol of a bad file
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "weights only" in str(exc).lower() or "weights_only" in str(exc):
            raise DataError(
                f"{path}: not a lexsem training state: it holds objects other than tensors and "
                "plain values, which are refused unread (loading them could run code)"
            ) from None
        raise DataError(
            f"{path}: not a training state lexsem can read ({_first_line(exc)})"
        ) from None
    except Exception as exc:  # any failure of the reader on a foreign file
        raise DataError(
            f"{path}: not a training state lexsem can read (truncated or not written by "
            f"lexsem train: {_first_line(exc)})"
        ) from None
    _check_state(path, state)
    return state


def _check_state(path: Path, state: Any) -> None:
    """The keys and shapes `restore_state` reads; a `DataError` naming the first missing."""
    if not isinstance(state, dict):
        raise DataError(f"{path}: not a lexsem training state (a {type(state).__name__})")
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise DataError(f"{path}: not a lexsem training state (no {', '.join(missing)})")
    names = {f.name for f in fields(Progress)}
    progress, rng = state["progress"], state["rng"]
    if not isinstance(progress, dict) or set(progress) - names:
        raise DataError(f"{path}: not a lexsem training state (its progress is not one)")
    if not isinstance(rng, dict) or not {"torch", "numpy", "python"} <= set(rng):
        raise DataError(f"{path}: not a lexsem training state (no random generator states)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= 160 else line[:157] + "..."


def restore_state(
    state: dict[str, Any], module: Any, optimizer: Any, schedule: Any, scaler: Any = None
) -> Progress:
    """Put a state read by `read_state` into the objects (and the fp16 gradient scaler's);
    the `Progress` it had."""
    module.load_state_dict(state["module"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    if scaler is not None and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    _set_rng_state(state["rng"])
    return Progress(**state["progress"])


def load_state(
    path: Path, module: Any, optimizer: Any, schedule: Any, scaler: Any = None
) -> Progress:
    """Restore the state at `path` into the objects (`read_state`, then `restore_state`);
    the `Progress` it had."""
    return restore_state(read_state(path), module, optimizer, schedule, scaler)

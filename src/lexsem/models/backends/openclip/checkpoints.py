"""Local open_clip checkpoints in the form of a training checkpoint, which open_clip does not
read: `{"model_state_dict": ..., "epoch": ..., ...}` — the form of BiVLC's released fine-tuned
CLIPs (BiVLC, App. E), `module.` prefixes (DDP) allowed. Such a file is loaded into the arch
built without weights (`quiet_random_init` hides open_clip's "initialized randomly" note for
it), every weight of its shape; anything else is left to open_clip."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The key of the weights in a training checkpoint as BiVLC releases its fine-tuned CLIPs
#: (``{"epoch", "model_state_dict", "optimizer_state_dict", "loss"}``: BiVLC, App. E), which
#: open_clip's `load_checkpoint` does not read (it knows a bare state dict and "state_dict").
TRAINING_STATE_KEY = "model_state_dict"
_NOT_TORCH_PICKLES = (".safetensors", ".npz", ".npy")


def training_state_dict(path: str | Path) -> dict[str, Any] | None:
    """The model weights of a training checkpoint holding them under `TRAINING_STATE_KEY`
    (DDP's ``module.`` prefixes removed), or None for any other file, which open_clip reads
    itself (a state dict, ``{"state_dict": ...}``, safetensors) or refuses with its own error.

    Read with ``weights_only`` and memory-mapped: looking at an ordinary checkpoint costs
    little more than its pickled structure."""
    if Path(path).suffix.lower() in _NOT_TORCH_PICKLES:
        return None
    import torch

    try:
        with warnings.catch_warnings():  # e.g. "looks like a TorchScript archive"
            warnings.simplefilter("ignore")
            ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # not a zip-format torch file: left to open_clip, which says why
        return None
    if not isinstance(ckpt, Mapping) or "state_dict" in ckpt:
        return None
    state = ckpt.get(TRAINING_STATE_KEY)
    if not isinstance(state, Mapping):
        return None
    return {str(k).removeprefix("module."): v for k, v in state.items()}


def _listed(names: list[str], limit: int = 3) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _misfit(model: Any, state: Mapping[str, Any]) -> str | None:
    """Why `state` does not fit `model` (missing, unexpected, other-shaped weights), or None."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [
        f"{k} {tuple(state[k].shape)} for {tuple(v.shape)}"
        for k, v in own.items()
        if k in state and tuple(getattr(state[k], "shape", ())) != tuple(v.shape)
    ]
    problems = [
        f"{label}: {_listed(names)}"
        for label, names in (("missing", missing), ("unexpected", unexpected), ("shape", shapes))
        if names
    ]
    return "; ".join(problems) or None


def load_training_state(model: Any, state: Mapping[str, Any], arch: str) -> None:
    """Load the weights of a training checkpoint into `model`: every weight, of its shape."""
    problem = _misfit(model, state)
    if problem is not None:
        raise ValueError(f"its {TRAINING_STATE_KEY!r} does not fit {arch} ({problem})")
    model.load_state_dict(state, strict=True)


class _NoRandomInitNote(logging.Filter):
    """Hides open_clip's "initialized randomly" note for a model whose weights load next."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "initialized randomly" not in record.getMessage()


@contextmanager
def quiet_random_init(active: bool) -> Iterator[None]:
    note = _NoRandomInitNote()
    root = logging.getLogger()  # open_clip logs with logging.warning
    if active:
        root.addFilter(note)
    try:
        yield
    finally:
        root.removeFilter(note)

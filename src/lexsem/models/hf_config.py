"""Read a transformers model folder's `config.json` without loading anything else.

Backends read it when they are built (no weights, no transformers): `clip:` and `itm:` pick the
model family from its `model_type`, `cola:` finds its labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lexsem.errors import DataError, ModelError
from lexsem.jsonl import read_json


def read_config(folder: str | Path, *, needed_for: str = "") -> dict[str, Any]:
    """The folder's config.json as a dict; ModelError when it is missing or unreadable
    (`needed_for` says why it is needed, for the message)."""
    path = Path(folder) / "config.json"
    if not path.exists():
        why = f"; {needed_for}" if needed_for else ""
        raise ModelError(f"model folder {folder} has no config.json{why}")
    try:
        config = read_json(path)
    except DataError as exc:
        raise ModelError(f"could not read {path}: {exc.detail}") from None
    if not isinstance(config, dict):
        raise ModelError(f"{path} is not a JSON object")
    return config


def read_model_type(folder: str | Path, *, needed_for: str = "") -> str:
    """`model_type` from a model folder's config.json."""
    model_type = read_config(folder, needed_for=needed_for).get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ModelError(f"{Path(folder) / 'config.json'} names no model_type")
    return model_type

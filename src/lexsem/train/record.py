"""Reading a training run's folder: `train.json` and the run folders of its evaluations."""

from __future__ import annotations

from pathlib import Path

from lexsem.errors import DataError
from lexsem.jsonl import read_json

__all__ = ["evaluation_folders"]


def evaluation_folders(folder: str | Path) -> list[Path]:
    """The run folders of a training run's evaluations, in order (before training, then each
    epoch); a `DataError` when it has none yet."""
    folder = Path(folder)
    path = folder / "train.json"
    record = read_json(path, what="a readable training record")
    runs = [Path(e["run"]) for e in record.get("progress", {}).get("evaluations", [])]
    if not runs:
        raise DataError(f"{folder}: the training run has no evaluation yet (judge_on / select_on)")
    return runs

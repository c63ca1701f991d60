"""The files of a synthetic-vs-natural detector (BiVLC, §5.4 and App. E): a sigmoid neuron on the
frozen text (EOT) or image (CLS) embedding of a CLIP model.

A detector folder holds, per kind (``text``, ``image``), the head's weights as
``KIND.safetensors`` (tensors ``weight``, shape (1, d), and ``bias``, shape (1,), float32) and
its record ``KIND.json`` (the base model's spec and fingerprint, the training data's sha256,
the settings, the seed, the per-epoch validation accuracy, the selected epoch, lexsem's version:
written by `lexsem.train.artifact_detector`). Weights are read with safetensors only: no pickle
is ever loaded. P(generated | x) = sigmoid(weight · f(x) + bias), with f the unnormalised
embedding of the base model's tower; label 0 is natural, 1 generated, as BiVLC's
`Detector_utils.py` labels them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from lexsem.errors import DataError, ModelError
from lexsem.jsonl import read_json

__all__ = ["DETECTOR_KINDS", "DetectorHead", "head_paths", "load_head", "save_head"]

DetectorKind = Literal["text", "image"]
DETECTOR_KINDS: tuple[DetectorKind, ...] = get_args(DetectorKind)


@dataclass(frozen=True)
class DetectorHead:
    """One trained head: its weights (torch tensors) and its record."""

    kind: str
    weight: Any  # torch.Tensor (1, d)
    bias: Any  # torch.Tensor (1,)
    record: dict[str, Any]

    @property
    def base_model(self) -> str:
        return str(self.record["base_model"]["spec"])

    def probs(self, features: Any) -> Any:
        """P(generated) of each row of `features` (n, d): a float32 tensor (n,)."""
        import torch

        if features.ndim != 2 or features.shape[1] != self.weight.shape[1]:
            got = features.shape[-1] if features.ndim else 0
            raise ModelError(
                f"the {self.kind} detector head takes {self.weight.shape[1]}-dimensional "
                f"embeddings but its base model {self.base_model} gives {got}-dimensional ones: "
                "the head was not trained on this model; train one on it (lexsem train-detector)"
            )
        x = features.to(self.weight.device, torch.float32)
        return torch.sigmoid(x @ self.weight.T + self.bias)[:, 0]


def head_paths(folder: Path, kind: str) -> tuple[Path, Path]:
    """(weights, record) of the `kind` head in `folder`."""
    return folder / f"{kind}.safetensors", folder / f"{kind}.json"


def save_head(folder: Path, kind: str, weight: Any, bias: Any, record: dict[str, Any]) -> None:
    """Write the `kind` head of `folder` atomically (weights, then the record)."""
    from safetensors.torch import save_file

    from lexsem.atomic import atomic_open, atomic_path

    weights, rec = head_paths(folder, kind)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {"weight": weight.detach().float().cpu().contiguous(),
               "bias": bias.detach().float().cpu().contiguous()}  # fmt: skip
    with atomic_path(weights) as tmp:
        save_file(tensors, str(tmp), metadata={"kind": kind})
    with atomic_open(rec, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")


def load_head(folder: Path, kind: str) -> DetectorHead:
    """The `kind` head of detector `folder`; ModelError naming the file when it is missing or
    not a detector head."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights, rec = head_paths(folder, kind)
    for path in (weights, rec):
        if not path.is_file():
            raise ModelError(
                f"{path}: no {kind} detector here (train one: lexsem train-detector "
                f"MANIFEST -m MODEL -o {folder})"
            )
    try:
        record = read_json(rec)
    except DataError as exc:
        raise ModelError(f"{rec}: not a detector record ({exc.detail})") from None
    if not isinstance(record, dict) or not isinstance(record.get("base_model"), dict):
        raise ModelError(f"{rec}: not a detector record (no base_model)")
    try:
        tensors = load_file(str(weights))
    except (OSError, SafetensorError) as exc:
        raise ModelError(f"{weights}: not a safetensors file ({exc})") from None
    weight, bias = tensors.get("weight"), tensors.get("bias")
    if weight is None or bias is None or weight.ndim != 2 or weight.shape[0] != 1:
        raise ModelError(f"{weights}: a detector head holds weight (1, d) and bias (1,)")
    if tuple(bias.shape) != (1,):
        raise ModelError(f"{weights}: a detector head holds weight (1, d) and bias (1,)")
    trained_on = record.get("embedding_dim")
    if isinstance(trained_on, int) and trained_on != weight.shape[1]:
        raise ModelError(
            f"{weights}: the head takes {weight.shape[1]}-dimensional embeddings but {rec} says "
            f"it was trained on {trained_on}-dimensional ones: the two files are not one head"
        )
    return DetectorHead(kind, weight.float(), bias.float(), record)

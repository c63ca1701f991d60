"""Test doubles and fixture builders shared by tests."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lexsem.data import loaders, registry
from lexsem.data.registry import BenchmarkSpec, SourceFile, SubsetSpec


class BagOfWordsEncoder:
    """Deterministic text encoder: hashed bag of lower-cased words. Counts what it encodes."""

    def __init__(self, dim: int = 64, name: str = "bow") -> None:
        self.dim = dim
        self.name = name
        self.calls = 0
        self.encoded: list[str] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-bow", "dim": self.dim}

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"[a-z]+", text.lower()):
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        return v

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        self.encoded.extend(texts)
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, self.dim))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


TRIPLETS = {
    "swap_obj": [
        ("A cat chases a dog.", "A dog is chased by a cat.", "A dog chases a cat."),
        ("A man rides a horse.", "A horse carries a man.", "A horse rides a man."),
        ("A red ball and a blue box.", "A blue box and a red ball.", "A blue ball and a red box."),
    ],
    "replace_att": [
        ("A small dog sleeps.", "A tiny dog is sleeping.", "A large dog sleeps."),
        ("Green apples on a table.", "On a table lie green apples.", "Red apples on a table."),
    ],
}


def register_fixture_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "fixture_pp"
) -> tuple[Path, BenchmarkSpec]:
    """Write SugarCrepe++-format files for TRIPLETS and register them as benchmark `name`."""
    data = tmp_path / "data"
    (data / name).mkdir(parents=True)
    subsets = []
    for sub, rows in TRIPLETS.items():
        recs = [
            {"id": i, "filename": f"{i}.jpg", "caption": p1, "caption2": p2, "negative_caption": n}
            for i, (p1, p2, n) in enumerate(rows)
        ]
        path = data / name / f"{sub}.json"
        path.write_text(json.dumps(recs), encoding="utf-8")
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        subsets.append(
            SubsetSpec(
                sub,
                SourceFile(f"{name}/{sub}.json", "http://127.0.0.1:9/x", sha),
                expected_items=len(rows),
            )
        )
    spec = BenchmarkSpec(
        name=name,
        description="test fixture",
        item_kind="triplet",
        subsets=tuple(subsets),
        loader=loaders.load_scpp_json,
        text_tasks=("tot",),
    )
    registry.names()  # make sure the built-ins are registered first
    monkeypatch.setitem(registry._REGISTRY, name, spec)
    return data, spec

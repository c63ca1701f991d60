"""`bow:NAME`: a hashed bag of words (numpy only, no files, no torch). It sees which words a
caption has, never their order, so it cannot tell "a dog bites a man" from "a man bites a dog":
the baseline every word-order benchmark should beat."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.models.options import Option

_WORD = re.compile(r"[\w']+")


class BagOfWords:
    backend: ClassVar[str] = "bow"
    description = "a hashed bag of words (numpy only): a baseline blind to word order"
    # the options a spec may give (`bow:NAME?dim=128`); NAME seeds the hashing
    options: ClassVar[Mapping[str, Option]] = {"dim": Option(int, 64)}

    def __init__(self, spec: Any, *, name: str | None = None, **_: Any) -> None:
        self.spec = spec
        self.name = name or f"bow:{spec.name}"
        self.dim = int(spec.get("dim"))

    @classmethod
    def offline_needs(cls, spec: Any) -> str | None:
        """What building `spec`'s model here needs beyond lexsem: nothing (no files)."""
        return None

    @property
    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes the vectors (the key of the model's request store)."""
        return {"backend": "bow", "name": self.spec.name, "dim": self.dim}

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.sha256(f"{self.spec.name}:{word}".encode()).hexdigest()
            v[int(digest, 16) % self.dim] += 1.0
        return v

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

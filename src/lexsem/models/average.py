"""`AverageScorer` (AVG_LM): the per-text mean of several blind text scorers' scores.

AVG_LM ("The Role of Linguistic Priors in Measuring Compositional Generalization of
Vision-Language Models", §4.1) is the mean perplexity (PP) over several language models; any
scorers that point the same way (`lower_is_better`) can be averaged. A text's score is NaN when
any member's is. The fingerprint holds the members' fingerprints, sorted, so the mean's cache key
does not depend on their order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.lazy import FINGERPRINT_VERSION
from lexsem.models.protocols import fingerprint_key

__all__ = ["AverageScorer"]


class AverageScorer:
    """The per-text mean of several scorers' scores (AVG_LM: the mean PP over several LMs).

    All members must point the same way (`lower_is_better`). A text's score is NaN when any
    member's is. `keep_loaded=False` unloads each member after its pass over the texts (one
    large model in memory at a time; each call then reloads them).
    """

    backend: ClassVar[str] = "avg"

    def __init__(
        self, scorers: Sequence[Any], *, name: str | None = None, keep_loaded: bool = True
    ) -> None:
        members = list(scorers)
        if not members:
            raise ModelError("AverageScorer needs at least one scorer")
        directions = {bool(s.lower_is_better) for s in members}
        if len(directions) != 1:
            raise ModelError(
                "AverageScorer: its scorers point different ways (lower_is_better differs)"
            )
        self.scorers = members
        self.lower_is_better = directions.pop()
        self.keep_loaded = keep_loaded
        self.name = name or "avg(" + ",".join(s.name for s in members) + ")"

    @property
    def loaded(self) -> bool:
        return any(getattr(s, "loaded", False) for s in self.scorers)

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The members' fingerprints, sorted (the mean does not depend on their order)."""
        fps = sorted((s.fingerprint for s in self.scorers), key=fingerprint_key)
        return {"fingerprint_version": FINGERPRINT_VERSION, "backend": "avg", "members": fps}

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": self.backend,
            "lower_is_better": self.lower_is_better,
            "members": [
                s.describe() if hasattr(s, "describe") else {"name": s.name} for s in self.scorers
            ],
            "fingerprint": self.fingerprint,
        }

    def __repr__(self) -> str:
        return f"AverageScorer({[s.name for s in self.scorers]!r})"

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("score_texts takes a sequence of texts, not one string")
        texts = list(texts)
        total = np.zeros(len(texts), dtype=np.float64)
        for s in self.scorers:
            scores = np.asarray(s.score_texts(texts, batch_size=batch_size), dtype=np.float64)
            if scores.shape != (len(texts),):
                raise ModelError(f"{s.name}: got {scores.shape} scores for {len(texts)} texts")
            total += scores
            if not self.keep_loaded and hasattr(s, "unload"):
                s.unload()
        return total / len(self.scorers)

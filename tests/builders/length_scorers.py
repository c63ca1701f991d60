"""Blind text scorers that only count: characters, words."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class CharLengthScorer:
    """A deterministic stand-in for a language model: perplexity ~ number of characters."""

    name = "charlen"
    lower_is_better = True

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-charlen", "lower_is_better": True}

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        return np.array([float(len(t)) for t in texts])


class WordCountScorer(CharLengthScorer):
    name = "words"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-words", "lower_is_better": True}

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        return np.array([float(len(t.split())) for t in texts])

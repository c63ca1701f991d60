"""Everything a run encoded or scored, and the per-item score columns read from it.

A column (`lexsem.tasks.base.Column`) becomes one float array over a benchmark's items: the
cosine of two text embeddings, the cosine of an image and a text embedding (dual encoders) or a
pair scorer's score, a blind per-text score (oriented so that higher = more plausible), a
flag read from the item, or a generative model's answer read into a number by the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from lexsem.benchmarks.items import Item
from lexsem.engine.cosine import row_cosine
from lexsem.tasks.base import Column

ImageKey = tuple[str, str]  # (decode profile, image reference)


@dataclass
class Scores:
    text_unit: np.ndarray | None = None  # L2-normalised text embeddings
    text_index: dict[str, int] = field(default_factory=dict)
    image_unit: np.ndarray | None = None  # L2-normalised image embeddings
    image_index: dict[ImageKey, int] = field(default_factory=dict)
    pair_values: np.ndarray | None = None  # pair scorer outputs
    pair_index: dict[tuple[str, str, str], int] = field(default_factory=dict)
    text_score: dict[str, float] = field(default_factory=dict)  # blind, higher = better
    answers: dict[tuple[str, str, str], str | None] = field(default_factory=dict)  # free form

    def column(self, col: Column, items: Sequence[Item], profile: str) -> np.ndarray:
        n = len(items)
        if col.kind == "flag":
            return np.fromiter((col.get(it) for it in items), bool, n)
        if col.kind == "text":
            return np.fromiter((self.text_score[col.get(it)] for it in items), np.float64, n)
        if col.kind == "answer":
            return self._read_answers(col, items, profile)
        if col.kind == "texts":
            a, b = zip(*(col.get(it) for it in items), strict=True) if n else ((), ())
            return self._text_cosine(a, b)
        return self._image_text([col.get(it) for it in items], profile)

    def answer_texts(self, col: Column, items: Sequence[Item], profile: str) -> list[str | None]:
        """The free-form answer behind each item's value of an `answer` column (None where the
        image was skipped)."""
        return [self.answers[(profile, *col.get(it))] for it in items]

    def _read_answers(self, col: Column, items: Sequence[Item], profile: str) -> np.ndarray:
        assert col.read is not None, f"answer column {col.name!r} has no read"
        texts = self.answer_texts(col, items, profile)
        return np.array(
            [np.nan if t is None else col.read(it, t) for it, t in zip(items, texts, strict=True)],
            dtype=np.float64,
        )

    def _rows(self, texts: Sequence[str]) -> np.ndarray:
        return np.fromiter((self.text_index[t] for t in texts), np.int64, len(texts))

    def _text_cosine(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        assert self.text_unit is not None
        return row_cosine(self.text_unit, self._rows(a), self._rows(b))

    def _image_text(self, pairs: list[tuple[str, str]], profile: str) -> np.ndarray:
        if self.pair_values is not None:
            idx = np.fromiter(
                (self.pair_index[(profile, r, t)] for r, t in pairs), np.int64, len(pairs)
            )
            return self.pair_values[idx].astype(np.float32, copy=False)
        assert self.image_unit is not None and self.text_unit is not None
        if self.image_unit.shape[1] == 0:  # every image skipped: no item has a score
            return np.full(len(pairs), np.nan, dtype=np.float32)
        ii = np.fromiter((self.image_index[(profile, r)] for r, _ in pairs), np.int64, len(pairs))
        ti = self._rows([t for _, t in pairs])
        return np.einsum("ij,ij->i", self.image_unit[ii], self.text_unit[ti], dtype=np.float32)

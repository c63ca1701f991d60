"""Everything a run encoded or scored, and the per-item score columns read from it.

A column (`lexsem.tasks.base.Column`) becomes one float array over a benchmark's items: the
cosine of two text embeddings, the cosine of an image and a text embedding (dual encoders) or a
pair scorer's score or a chat model's VQAScore, a blind per-text score (oriented so that
higher = more plausible), a flag read from the item, or a chat model's answer read into a
number by the column, or people's votes on a question about the item (a by-item model's).
`extra_columns` gives what the run's item table keeps beside a column:
the raw answer and the rule that read it, or what a VQAScore is made of.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lexsem.engine.cosine import row_cosine
from lexsem.tasks.base import Column

AnswerKey = tuple[str, str, str, str, str]  # (benchmark, task, column, subset, item id)

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
    answers: dict[AnswerKey, str | None] = field(default_factory=dict)  # free form
    votes: dict[AnswerKey, float] = field(default_factory=dict)  # people's, by item
    # what each VQAScore of a chat model is made of, by (profile, image reference, text)
    pair_details: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def column(self, col: Column, work: Any, task: str) -> np.ndarray:
        """`col` of `task` over the items of `work` (`lexsem.engine.plan.Work`)."""
        items, profile = work.items, work.decode
        n = len(items)
        if col.kind == "flag":
            return np.fromiter((col.get(it) for it in items), bool, n)
        if col.kind == "text":
            return np.fromiter((self.text_score[col.get(it)] for it in items), np.float64, n)
        if col.kind == "answer":
            return self._read_answers(col, work, task)
        if col.kind == "votes":  # NaN: the query was not asked
            keys = ((work.benchmark, task, col.name, it.subset, str(it.id)) for it in items)
            return np.fromiter((self.votes.get(k, np.nan) for k in keys), np.float64, n)
        if col.kind == "texts":
            a, b = zip(*(col.get(it) for it in items), strict=True) if n else ((), ())
            return self._text_cosine(a, b)
        return self._image_text([col.get(it) for it in items], profile)

    def answer_texts(self, col: Column, work: Any, task: str) -> list[str | None]:
        """The free-form answer behind each item's value of an `answer` column (None where the
        image was skipped or no answer was recorded)."""
        return [
            self.answers.get((work.benchmark, task, col.name, it.subset, str(it.id)))
            for it in work.items
        ]

    def extra_columns(self, col: Column, work: Any, task: str) -> dict[str, np.ndarray]:
        """What the item table keeps beside `col`: an answer column's raw answers
        (`text_<name>`) and the rules that read them (`rule_<name>`); a VQAScore's image, text
        and answer probabilities, as JSON (`detail_<name>`)."""
        if col.kind == "answer":
            texts = self.answer_texts(col, work, task)
            out = {f"text_{col.name}": np.array(texts, dtype=object)}
            if col.rule is not None:
                rules = [None if t is None else col.rule(it, t) for it, t in
                         zip(work.items, texts, strict=True)]  # fmt: skip
                out[f"rule_{col.name}"] = np.array(rules, dtype=object)
            return out
        if col.kind == "image_text" and self.pair_details:
            details = []
            for it in work.items:
                ref, text = col.get(it)
                d = self.pair_details.get((work.decode, ref, text))
                details.append(None if d is None else json.dumps({"image": ref, "text": text, **d}))
            return {f"detail_{col.name}": np.array(details, dtype=object)}
        return {}

    def _read_answers(self, col: Column, work: Any, task: str) -> np.ndarray:
        assert col.read is not None, f"answer column {col.name!r} has no read"
        texts = self.answer_texts(col, work, task)
        return np.array(
            [np.nan if t is None else col.read(it, t)
             for it, t in zip(work.items, texts, strict=True)],
            dtype=np.float64,
        )  # fmt: skip

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

"""What a task is: the per-item score columns it needs and the metrics it derives from them.

A `Column` says what one score of an item is made of: two texts (`texts`: cosine of two text
embeddings), an image and a text (`image_text`: a dual encoder's cosine or a pair scorer's
score), one text (`text`: a blind per-text score), a flag computed from the item itself
(`flag`), or a generative model's free-form answer to a prompt about the item's image
(`answer`), read into a number by the column's `read`, or people's votes on one question
about the item (`votes`: a human study's answers, `lexsem.tasks.voted`). The engine fills
columns from these descriptions without knowing any item kind or benchmark; the task's
`compute` turns the filled columns into `Hits` per metric.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from lexsem.stats.ties import Hits, TiePolicy

Columns = Mapping[str, np.ndarray]
ColumnKind = Literal["texts", "image_text", "text", "flag", "answer", "votes"]
Modality = Literal["text", "image", "blind", "answer"]


@dataclass(frozen=True)
class Column:
    """One score column: its name, what it is made of, and how to read that from an item."""

    name: str
    kind: ColumnKind
    get: Callable[[Any], Any] = field(repr=False)  # item -> (a, b) | (ref, text) | text | flag
    # `answer` columns: get(item) -> (image ref, prompt); read(item, answer) -> the column's
    # value (the option the free-form answer names, as a number); demo(item) -> (image ref,
    # prompt, right answer) of the item shown as a k-shot demonstration; rule(item, answer) ->
    # which rule read the answer (kept in the run's item table)
    read: Callable[[Any, str], float] | None = field(default=None, repr=False)
    demo: Callable[[Any], tuple[str, str, str]] | None = field(default=None, repr=False)
    rule: Callable[[Any, str], str] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Task:
    """A task: the item kind it applies to, the columns it needs, the metrics it computes.

    `metrics[0]` is the task's main metric; `chance` gives each metric's random-guess accuracy
    (percent) where it is defined; `labels` the paper's name of each metric for tables.
    `probability_scores`: the task reads each image-text score as the probability of a match
    and compares it with 0.5 (not with another score): only a pair scorer can run it (the
    evaluator refuses any other model before any model work); that the scorer's scores are
    probabilities is the user's choice of model (`vqa:...?score=vqa_norm`).
    """

    name: str
    description: str
    item_kind: str  # "triplet" | "pair" | "quad" | "multi"
    modality: Modality  # which kind of model runs it
    columns: tuple[Column, ...]
    metrics: tuple[str, ...]
    compute: Callable[[Columns, TiePolicy], dict[str, Hits]] = field(repr=False)
    chance: Mapping[str, float] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    probability_scores: bool = False
    # the columns each metric reads, where a metric reads fewer than all: an item is scored for
    # a metric when those columns have values (multiple choice: the accuracy under one
    # ordering needs that ordering's answer only); metrics not named read every column
    metric_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # multiple choice: the rule its answer columns are read by ("authors" or "strict",
    # `lexsem.tasks.answer_rules`), and the same task read by the other rule where the two
    # rules differ (the run reports both and the answers on which they disagree)
    answer_rule: str | None = None
    other_reading: Task | None = field(default=None, repr=False)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

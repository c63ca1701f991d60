"""Planning: the unique requests of every benchmark x task in a run, each to be made once.

The plan reads only task columns (`lexsem.tasks.base.Column`): which texts a text encoder or a
blind scorer must see, which (image, text) pairs an image model must score, and which (image,
prompt) pairs a generative model must answer. It knows no
benchmark and no item kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lexsem.benchmarks.items import Item
from lexsem.errors import DataError
from lexsem.tasks.base import Task

Pair = tuple[str, str]  # (image reference, text)


@dataclass
class Work:
    """One benchmark's share of a run: its name, items, tasks and image decode profile."""

    benchmark: str
    items: list[Item]
    tasks: list[Task]
    decode: str = "default"


@dataclass
class Plan:
    texts: list[str] = field(default_factory=list)  # unique texts, first-seen order
    pairs: dict[str, list[Pair]] = field(default_factory=dict)  # decode profile -> unique pairs
    asks: dict[str, list[Pair]] = field(default_factory=dict)  # profile -> (image, prompt)
    labels: dict[str, str] = field(default_factory=dict)  # image ref -> "bench/subset#id"

    @property
    def n_pairs(self) -> int:
        return sum(len(p) for p in self.pairs.values())


def unique_texts(item_lists: Iterable[Iterable[Item]]) -> list[str]:
    """Every distinct text across all items, in first-seen order (deterministic)."""
    seen: dict[str, None] = {}
    for items in item_lists:
        for item in items:
            for t in item.texts():
                seen.setdefault(t, None)
    return list(seen)


def image_pairs(work: Work, task: Task, kind: str = "image_text") -> list[Pair]:
    """The (image, text) pair of every column of `kind` of `task` (image-text scores, or the
    (image, prompt) of `answer` columns), item by item, column by column."""
    out: list[Pair] = []
    for col in task.columns:
        if col.kind != kind:
            continue
        for it in work.items:
            ref, text = col.get(it)
            if not ref:
                raise DataError("has no image reference", item=f"{it.subset}#{it.id}")
            out.append((ref, text))
    return out


def make_plan(works: Sequence[Work], *, pairs_as_texts: bool) -> Plan:
    """Every text and (image, text) pair of every task, each once. With `pairs_as_texts` (a
    dual encoder) the pairs' texts are embedded too."""
    plan = Plan()
    text_lists: list[list[str]] = []
    pairs: dict[str, dict[Pair, None]] = {}
    asks: dict[str, dict[Pair, None]] = {}
    for w in works:
        for task in w.tasks:
            if task.modality in ("text", "blind"):
                text_lists.append([t for it in w.items for t in it.texts()])
            for it_pair in image_pairs(w, task):
                pairs.setdefault(w.decode, {}).setdefault(it_pair, None)
            for it_pair in image_pairs(w, task, "answer"):
                asks.setdefault(w.decode, {}).setdefault(it_pair, None)
            _label_refs(plan.labels, w, task)
    plan.pairs = {profile: list(p) for profile, p in pairs.items()}
    plan.asks = {profile: list(p) for profile, p in asks.items()}
    if pairs_as_texts:
        text_lists += [[t for _, t in p] for p in plan.pairs.values()]
    plan.texts = list(dict.fromkeys(t for lst in text_lists for t in lst))
    return plan


def _label_refs(labels: dict[str, str], work: Work, task: Task) -> None:
    for col in task.columns:
        if col.kind in ("image_text", "answer"):
            for it in work.items:
                labels.setdefault(col.get(it)[0], f"{work.benchmark}/{it.subset}#{it.id}")

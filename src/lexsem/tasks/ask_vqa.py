"""VQAScore of a benchmark's items through an API model's log-probabilities (`lexsem ask
--vqascore`): P(answer) to `Does this figure show "{text}"? Please answer yes or no.` about
the item's image, for every caption of the item (`lexsem.engine.chat.answer_probabilities`),
then the image-to-text ranking of the benchmark's image task:

- triplets (SugarCrepe++ ITT): both positives above the negative, s(I, P1) > s(I, N) and
  s(I, P2) > s(I, N);
- pairs (SugarCrepe): s(I, C+) > s(I, C-);
- several captions (ARO): the true caption above every other;
- two images and two captions (BiVLC, Winoground): both images with both captions, the group
  hit (I2T and T2I) printed; a run (`ask --run`) has every metric of the benchmark's task.

Comparisons are strict (a tie is a miss, and counted). Scores (as the local `vqa:` backend's):
`vqa` = P(answer); `vqa_norm` = P(answer) / (P(answer) + P(negative)) — 0.5 when both are 0
(neither among the top log-probabilities); `vqa_diff` = P(answer) - P(negative).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lexsem.engine.chat import ChatStats, answer_probabilities
from lexsem.errors import DataError
from lexsem.models.backends.openai_chat import AnswerProb
from lexsem.stats.ties import Hits, all_of, beats
from lexsem.tasks.choice_run import image_reader

__all__ = [
    "SCORES",
    "VQAPair",
    "VQAResult",
    "ask_vqa",
    "question_template",
    "vqa_markdown",
    "vqa_score",
]

SCORES = ("vqa", "vqa_norm", "vqa_diff")


def question_template(question: str | None) -> str:
    """The question: a template with `{text}`, a preset of the `vqa:` backend (`t17_1` ...
    `t17_5`, SugarCrepe++ Table 17), or None for VQAScore's own question."""
    from lexsem.models.backends.vqa import QUESTION, QUESTIONS

    text = QUESTIONS.get(question, question) if question else QUESTION
    if "{text}" not in text:
        raise DataError(
            f"question {question!r} has no {{text}} placeholder and is no preset "
            f"({', '.join(QUESTIONS)})"
        )
    return text


@dataclass(frozen=True)
class VQAPair:
    """One (image, caption) of an item: its role (`p1`, `p2`, `n`; `pos`, `neg`; `c0` ...),
    its score and the probabilities it is made of."""

    item_id: str
    subset: str
    role: str
    text: str
    score: float
    probs: dict[str, AnswerProb]
    image: str = ""  # the image reference the caption was asked about


@dataclass
class VQAResult:
    pairs: list[VQAPair]
    accuracy: dict[str, float] = field(default_factory=dict)  # per subset and "all", in %
    n: dict[str, int] = field(default_factory=dict)
    ties: dict[str, int] = field(default_factory=dict)
    below_top_k: dict[str, int] = field(default_factory=dict)  # answers absent from the top k
    task: dict[str, str] = field(default_factory=dict)  # per subset: what a hit is


def vqa_score(probs: dict[str, AnswerProb], mode: str, answer: str, negative: str) -> float:
    """The score of one pair from its answers' probabilities."""
    yes = probs[answer].prob
    if mode == "vqa":
        return yes
    no = probs[negative].prob
    if mode == "vqa_norm":
        return yes / (yes + no) if yes + no > 0 else 0.5
    if mode == "vqa_diff":
        return yes - no
    raise DataError(f"unknown score {mode!r} (one of {', '.join(SCORES)})")


def _roles(item: Any) -> list[tuple[str, str, str]]:
    """(role, image reference, caption) of every pair the item's task compares."""
    if hasattr(item, "image0"):  # BiVLC, Winoground: both images with both captions
        return [
            (f"i{i}c{c}", getattr(item, f"image{i}"), getattr(item, f"caption{c}"))
            for i in (0, 1)
            for c in (0, 1)
        ]
    if hasattr(item, "p1"):
        return [(r, item.image, t) for r, t in (("p1", item.p1), ("p2", item.p2), ("n", item.n))]
    if hasattr(item, "pos"):
        return [("pos", item.image, item.pos), ("neg", item.image, item.neg)]
    if hasattr(item, "captions"):
        return [(f"c{i}", item.image, t) for i, t in enumerate(item.captions)]
    raise DataError(f"item {item.subset}/{item.id}: no image-caption pairs to score")


def ask_vqa(
    model: Any,
    items: Sequence[Any],
    images: Any,
    store: Any,
    *,
    question: str | None = None,
    answer: str = "Yes",
    negative: str = "No",
    score: str = "vqa",
    **send: Any,
) -> tuple[VQAResult, ChatStats]:
    """VQAScore of every caption of `items` about its image, and the ranking accuracy per
    subset (see the module doc); `send`: options of `lexsem.engine.chat.chat_records`."""
    if score not in SCORES:
        raise DataError(f"unknown score {score!r} (one of {', '.join(SCORES)})")
    template = question_template(question)
    read = image_reader(images)
    asked = [(it, role, ref, text) for it in items for role, ref, text in _roles(it)]
    pairs = [(read(ref), text) for _, _, ref, text in asked]
    # P(negative) comes with P(answer) from the top log-probabilities; asked only when needed
    # from the prompt's log-probabilities (one request per answer)
    answers = (answer, negative) if score != "vqa" or model.logprobs_mode == "top" else (answer,)
    probs, stats = answer_probabilities(
        model, pairs, store, question=template, answers=answers, **send
    )
    rows = [
        VQAPair(str(it.id), it.subset, role, text, vqa_score(p, score, answer, negative), p, ref)
        for (it, role, ref, text), p in zip(asked, probs, strict=True)
    ]
    return _accuracy(items, rows), stats


_TASKS = {
    "quad": "group: I2T s(I0,C0) > s(I0,C1), s(I1,C1) > s(I1,C0) and T2I s(I0,C0) > s(I1,C0), "
    "s(I1,C1) > s(I0,C1)",
    "triplet": "ITT: s(I,P1) > s(I,N) and s(I,P2) > s(I,N)",
    "pair": "s(I,C+) > s(I,C-)",
    "multi": "the true caption above every other",
}


def _kind(roles: dict[str, VQAPair]) -> str:
    if "i0c0" in roles:
        return "quad"
    if "p1" in roles:
        return "triplet"
    return "pair" if "pos" in roles else "multi"


def _item_hit(roles: dict[str, VQAPair]) -> Hits:
    """Whether one item is a hit (and whether a deciding comparison tied)."""
    s = {role: np.array([r.score]) for role, r in roles.items()}
    kind = _kind(roles)
    if kind == "quad":
        i2t = all_of(beats(s["i0c0"], s["i0c1"]), beats(s["i1c1"], s["i1c0"]))
        t2i = all_of(beats(s["i0c0"], s["i1c0"]), beats(s["i1c1"], s["i0c1"]))
        return all_of(i2t, t2i)
    if kind == "triplet":
        return all_of(beats(s["p1"], s["n"]), beats(s["p2"], s["n"]))
    if kind == "pair":
        return beats(s["pos"], s["neg"])
    return all_of(*[beats(s["c0"], s[k]) for k in s if k != "c0"])


def _accuracy(items: Sequence[Any], rows: list[VQAPair]) -> VQAResult:
    out = VQAResult(rows)
    by_item: dict[tuple[str, str], dict[str, VQAPair]] = {}
    for r in rows:
        by_item.setdefault((r.subset, r.item_id), {})[r.role] = r
    every: list[tuple[str, Hits, int]] = []
    for it in items:
        roles = by_item[(it.subset, str(it.id))]
        below = sum(p.below_top_k for r in roles.values() for p in r.probs.values())
        every.append((it.subset, _item_hit(roles), below))
        out.task.setdefault(it.subset, _TASKS[_kind(roles)])
    for subset in [*out.task, "all"]:
        mine = [(h, b) for sub, h, b in every if subset in (sub, "all")]
        out.n[subset] = len(mine)
        out.accuracy[subset] = 100.0 * sum(bool(h.hits[0]) for h, _ in mine) / max(1, len(mine))
        out.ties[subset] = sum(bool(h.ties[0]) for h, _ in mine)
        out.below_top_k[subset] = sum(b for _, b in mine)
    return out


def vqa_markdown(result: VQAResult, score: str, model: str) -> str:
    lines = [
        f"VQAScore ({score}) of {model}",
        "",
        "| subset | items | accuracy (%) | ties | answers below top-k | hit |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for subset, acc in result.accuracy.items():
        task = result.task.get(subset, "")
        lines.append(
            f"| {subset} | {result.n[subset]} | {acc:.2f} | {result.ties[subset]} | "
            f"{result.below_top_k[subset]} | {task} |"
        )
    lines += [
        "",
        "ties are misses; an answer below top-k was not among the top log-probabilities "
        "returned: its probability is taken as 0 (logprobs=top).",
    ]
    return "\n".join(lines) + "\n"

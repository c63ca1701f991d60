"""How a study is going (`lexsem annotate status` and the admin page): progress per annotator,
gold accuracy and who fails it (flagged below the study's `gold_pass`), and agreement so far
per task kind: percent agreement (pairs of annotators who answered the same unit, skips left
out) and Krippendorff's α (nominal, `lexsem.stats.agreement`). The exported answers get the
full statistics with intervals (`lexsem annotate agreement`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

from lexsem.annotate import store
from lexsem.annotate.study import load_settings
from lexsem.stats.agreement import krippendorff_alpha, rating_matrix

__all__ = ["AnnotatorProgress", "Progress", "progress"]


@dataclass(frozen=True)
class AnnotatorProgress:
    annotator: str
    consented: bool
    assigned: int  # practice, gold and main units
    answered: int
    practice_answered: int
    gold_answered: int
    gold_correct: int
    median_seconds: float | None
    flagged: bool

    @property
    def done(self) -> bool:
        return self.assigned > 0 and self.answered == self.assigned

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_answered if self.gold_answered else None


@dataclass(frozen=True)
class Progress:
    study: str
    items: int  # main items
    overlap: int
    annotators: list[AnnotatorProgress]
    # kind -> (percent agreement, pairs, Krippendorff's alpha: NaN where undefined)
    agreement: dict[str, tuple[float, int, float]]
    answers: int  # main answers given

    @property
    def needed(self) -> int:
        return self.items * self.overlap


def progress(con: store.Connection) -> Progress:
    settings = load_settings(con)
    with store.read(con):
        items = store.main_item_count(con)
        people = store.annotators(con)
        rows = store.assignments(con)
    per: dict[str, list[store.Assignment]] = defaultdict(list)
    for r in rows:
        per[r.annotator].append(r)
    out = []
    for who in people:
        mine = per.get(who.id, [])
        done = [r for r in mine if r.answer is not None]
        gold = [r for r in done if r.gold]
        right = sum(r.answer == r.correct for r in gold)
        secs = [r.seconds for r in done if not r.practice and r.seconds is not None]
        acc = right / len(gold) if gold else None
        out.append(
            AnnotatorProgress(
                who.id,
                who.consented_at is not None,
                len(mine),
                len(done),
                sum(r.practice for r in done),
                len(gold),
                right,
                statistics.median(secs) if secs else None,
                acc is not None and acc < settings.gold_pass,
            )
        )
    main = [r for r in rows if r.answer is not None and not r.practice and not r.gold]
    return Progress(settings.name, items, settings.overlap, out, _agreement(main), len(main))


def _agreement(rows: list[store.Assignment]) -> dict[str, tuple[float, int, float]]:
    by_unit: dict[tuple[str, int], list[str]] = defaultdict(list)
    ratings: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for r in rows:
        if r.answer is not None and r.answer != "skip":
            by_unit[(r.kind, r.unit)].append(r.answer)
            ratings[r.kind].append((str(r.unit), r.annotator, r.answer))
    same: dict[str, int] = defaultdict(int)
    pairs: dict[str, int] = defaultdict(int)
    for (kind, _), answers in by_unit.items():
        for a, b in combinations(answers, 2):
            pairs[kind] += 1
            same[kind] += a == b
    return {
        k: (100.0 * same[k] / n, n, krippendorff_alpha(rating_matrix(ratings[k]).codes))
        for k, n in sorted(pairs.items())
    }

"""Per-annotator randomisation, seeded and recorded: each annotator's seed comes from the
study's seed and the annotator's id; from it, the order of each query's options (which caption
is first, which image is left) and the order in which the annotator's items are served. The
option order shown is stored with each assignment and exported (`options`).

A page never names an option's role: a choice posts its place in the order shown ("1", "2",
...), a fixed choice its own name ("none", "both", "accept", ...), and only the server maps a
place back to the option (`posted_values`, `option_of`)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

__all__ = ["annotator_seed", "option_of", "option_order", "posted_values", "serving_order"]


def annotator_seed(study_seed: int, annotator: str) -> int:
    digest = hashlib.sha256(f"{study_seed}:{annotator}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def option_order(seed: int, unit: int, options: Sequence[str], fixed: Sequence[str]) -> list[str]:
    """The options of `unit` in the order this annotator sees them: shuffled, then the fixed
    choices ("none", "both", ...) in their own order."""
    shuffled = list(options)
    random.Random(f"{seed}:options:{unit}").shuffle(shuffled)
    return [*shuffled, *fixed]


def serving_order(seed: int, units: Sequence[tuple[int, int]]) -> list[int]:
    """Units as (block, id) in serving order: blocks in order (a study's task kinds, as BiVLC
    serves its I2T part before its T2I part), shuffled within each block."""
    rng = random.Random(f"{seed}:serve")
    keyed = [(block, rng.random(), unit) for block, unit in units]
    return [unit for _, _, unit in sorted(keyed)]


def posted_values(shown: Sequence[str], fixed: Sequence[str]) -> list[str]:
    """What each choice of `shown` (option ids in the order shown, the fixed choices last)
    posts: an option its place ("1", "2", ...), a fixed choice its name."""
    n = len(shown) - len(fixed)
    return [str(i + 1) if i < n else oid for i, oid in enumerate(shown)]


def option_of(shown: Sequence[str], fixed: Sequence[str], value: str) -> str | None:
    """The option id or fixed choice that `value` posts on a page showing `shown`, "skip" for
    a skip, or None where the page offered no such value."""
    if value == "skip":
        return value
    for oid, posted in zip(shown, posted_values(shown, fixed), strict=True):
        if posted == value:
            return oid
    return None

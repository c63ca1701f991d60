"""Per-annotator randomisation, seeded and recorded: each annotator's seed comes from the
study's seed and the annotator's id; from it, the order of each query's options (which caption
is first, which image is left) and the order in which the annotator's items are served. The
option order shown is stored with each assignment and exported (`options`)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

__all__ = ["annotator_seed", "option_order", "serving_order"]


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

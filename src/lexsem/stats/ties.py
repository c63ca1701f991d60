"""Strict comparison of scores under a tie policy.

All reference implementations compare with strict `>`, so a tie is a failure (`strict`, the
default). `lenient` counts a tie as a success (`>=`), which bounds how much ties could matter.
The number of ties is reported either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

TiePolicy = Literal["strict", "lenient"]
TIE_POLICIES: tuple[str, ...] = get_args(TiePolicy)


def check_policy(policy: str) -> TiePolicy:
    if policy not in TIE_POLICIES:
        raise ValueError(f"unknown tie policy {policy!r}; choose one of {TIE_POLICIES}")
    return policy  # type: ignore[return-value]


@dataclass(frozen=True)
class Hits:
    """Per-item outcome of one metric: success flags and whether a deciding comparison tied."""

    hits: np.ndarray  # bool (n,)
    ties: np.ndarray  # bool (n,)

    def __post_init__(self) -> None:
        if self.hits.shape != self.ties.shape:
            raise ValueError("hits and ties must have the same shape")


def beats(a: np.ndarray, b: np.ndarray, policy: TiePolicy = "strict") -> Hits:
    """a > b per item (a >= b under `lenient`); ties flagged."""
    a = np.asarray(a)
    b = np.asarray(b)
    tie = a == b
    win = a >= b if check_policy(policy) == "lenient" else a > b
    return Hits(win, tie)


def all_of(*parts: Hits) -> Hits:
    """Conjunction of several comparisons; the item counts as tied if any part tied."""
    hits = np.logical_and.reduce([p.hits for p in parts])
    ties = np.logical_or.reduce([p.ties for p in parts])
    return Hits(hits, ties)

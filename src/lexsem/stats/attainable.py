"""Whether a printed accuracy can be the accuracy of n items at all.

An accuracy over n items is 100·k/n for an integer k in [0, n]. A paper prints it rounded to
`decimals` places, so a printed value v is **attainable** over n items iff some k has
100·k/n within half a unit of the last printed place of v:

    |100·k/n − v| ≤ ½·10^(−decimals)

The bound is inclusive at both ends, so a value exactly halfway between two printed values
counts for both: rounding half up and rounding half to even are both accepted. The printed
value is read as its shortest decimal string (`repr`: 45.18 is exactly 4518/100) and every
comparison is in exact fractions, so no float tolerance is needed.

A macro accuracy (the mean of the accuracies of m subsets of n_1, …, n_m items) is
attainable iff some k_1, …, k_m (0 ≤ k_i ≤ n_i) give a mean (100/m)·Σ k_i/n_i within the same
bound (`attainable_mean`). That is a bounded search: a depth-first search over k_1 … k_{m−1},
each level narrowed to the k_i that can still reach the bound, the last k_m solved directly;
it stops at the first solution, and answers None (not decided) when it has visited more than
`budget` partial sums.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

__all__ = ["attainable", "attainable_mean", "half_unit", "nearest"]

BUDGET = 200_000  # partial sums `attainable_mean` visits before it answers None


def half_unit(decimals: int) -> Fraction:
    """Half a unit of the last printed place: 0.005 for 2 decimals."""
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0: {decimals}")
    return Fraction(1, 2 * 10**decimals)


def _printed(value: float) -> Fraction:
    """`value` as the decimal it prints as (45.18 -> 4518/100, not the binary float)."""
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value}")
    return Fraction(repr(float(value)))


def _k_range(low: Fraction, high: Fraction, n: int) -> tuple[int, int]:
    """The integers k in [0, n] with low ≤ k/n ≤ high (an empty range when first > last)."""
    return max(0, math.ceil(low * n)), min(n, math.floor(high * n))


def attainable(value: float, n: int, decimals: int) -> bool:
    """Whether some k in [0, n] has 100·k/n printed with `decimals` places as `value`
    (either rounding of a halfway value accepted)."""
    if n < 1:
        raise ValueError(f"an accuracy needs n >= 1 items: {n}")
    v, h = _printed(value), half_unit(decimals)
    first, last = _k_range((v - h) / 100, (v + h) / 100, n)
    return first <= last


def nearest(value: float, n: int) -> tuple[int, ...]:
    """The k (one, or two when `value` lies between two) whose 100·k/n are nearest `value`:
    what a reader checks by hand (45.18 over 245: 110 → 44.90, 111 → 45.31)."""
    if n < 1:
        raise ValueError(f"an accuracy needs n >= 1 items: {n}")
    x = _printed(value) * n / 100
    low, high = max(0, min(n, math.floor(x))), max(0, min(n, math.ceil(x)))
    return (low,) if low == high else (low, high)


def attainable_mean(
    value: float, ns: Sequence[int], decimals: int, *, budget: int = BUDGET
) -> bool | None:
    """Whether some k_i in [0, n_i] give a mean of the accuracies 100·k_i/n_i that prints with
    `decimals` places as `value` (either rounding of a halfway value accepted); None when the
    search visits more than `budget` partial sums without deciding."""
    if not ns:
        raise ValueError("a mean needs at least one subset")
    if any(n < 1 for n in ns):
        raise ValueError(f"an accuracy needs n >= 1 items: {list(ns)}")
    v, h = _printed(value), half_unit(decimals)
    m = len(ns)
    # the sum S = Σ k_i/n_i must lie in [low, high]
    low, high = (v - h) * m / 100, (v + h) * m / 100
    order = sorted(ns)  # the largest n last: solved directly, the finest step
    visited = 0

    def search(level: int, partial: Fraction) -> bool | None:
        nonlocal visited
        visited += 1
        if visited > budget:
            return None
        n = order[level]
        rest = len(order) - level - 1  # the subsets after this one add [0, rest] to S
        first, last = _k_range(low - partial - rest, high - partial, n)
        if first > last:
            return False
        if rest == 0:
            return True
        # from the middle of the range outwards: a solution, when there is one, is found early
        middle = (first + last) // 2
        undecided = False
        for step in range(last - first + 1):
            k = middle + (step + 1) // 2 * (1 if step % 2 else -1)
            if not first <= k <= last:
                continue
            found = search(level + 1, partial + Fraction(k, n))
            if found:
                return True
            if found is None:
                undecided = True
                break
        return None if undecided else False

    return search(0, Fraction(0))

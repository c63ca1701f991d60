"""The exact McNemar test of two classifiers on the same items (McNemar, "Note on the sampling
error of the difference between correlated proportions or percentages", Psychometrika 1947).

b = items A gets right and B wrong, c = the reverse; under H0 (same accuracy) the discordant
items split Binomial(b + c, ½); p = two-sided exact binomial test (`scipy.stats.binomtest`),
statistic = min(b, c) (as statsmodels' exact McNemar). scipy is imported on the first test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["McNemarTest", "mcnemar_exact", "mcnemar_test"]


@dataclass(frozen=True)
class McNemarTest:
    """The discordant counts of two paired hit vectors and the exact two-sided test on them."""

    n: int  # paired items
    b: int  # A right, B wrong
    c: int  # A wrong, B right
    statistic: float  # min(b, c)
    p_value: float  # two-sided exact binomial test on b of b + c, p = ½; 1.0 when b + c = 0


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: binomtest(b, b + c, ½); 1.0 without discordant pairs."""
    if b < 0 or c < 0:
        raise ValueError("b and c must be non-negative")
    if b + c == 0:
        return 1.0
    from scipy import stats

    return float(stats.binomtest(int(b), int(b + c), 0.5, alternative="two-sided").pvalue)


def mcnemar_test(hits_a: np.ndarray, hits_b: np.ndarray) -> McNemarTest:
    """The exact McNemar test of the boolean hits of A and B, paired by position."""
    a = np.asarray(hits_a, dtype=bool)
    other = np.asarray(hits_b, dtype=bool)
    if a.shape != other.shape or a.ndim != 1:
        raise ValueError(f"paired hits must be two vectors of one length: {a.shape}, {other.shape}")
    b = int(np.sum(a & ~other))
    c = int(np.sum(~a & other))
    return McNemarTest(n=len(a), b=b, c=c, statistic=float(min(b, c)), p_value=mcnemar_exact(b, c))

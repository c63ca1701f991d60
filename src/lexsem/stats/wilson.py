"""The Wilson score interval of a proportion (Wilson, "Probable inference, the law of
succession, and statistical inference", JASA 1927), the interval of a human study's accuracies.

A study answers a few items: 4 of 4 right gives a percentile bootstrap of [100, 100] (every
resample is all right), which says nothing. The Wilson interval inverts the score test of the
binomial proportion, so it stays inside [0, 1] and is never a point for n ≥ 1: 4/4 at 95% is
[51.0, 100.0]. Brown, Cai and DasGupta ("Interval estimation for a binomial proportion",
Statistical Science 2001) recommend it for small n. Computed by
`scipy.stats.binomtest(k, n).proportion_ci(method="wilson")` (scipy is imported on the first
call).
"""

from __future__ import annotations

__all__ = ["wilson_interval"]


def wilson_interval(hits: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval (percent) of `hits` right of `n` at `confidence`; None when
    n is 0 (no proportion)."""
    if n < 0 or not 0 <= hits <= n:
        raise ValueError(f"a proportion needs 0 <= hits <= n: {hits} of {n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1): {confidence}")
    if n == 0:
        return None
    from scipy import stats

    ci = stats.binomtest(int(hits), int(n)).proportion_ci(
        confidence_level=confidence, method="wilson"
    )
    return 100.0 * float(ci.low), 100.0 * float(ci.high)

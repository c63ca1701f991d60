"""Accuracies with bootstrap confidence intervals: per subset, micro and macro.

Bootstrap: items are resampled with replacement within each subset (scipy.stats.bootstrap,
percentile method, seeded), so the micro and macro intervals respect the subset sizes. Each row
has its own seed, derived from the caller's seed and the row's name (the subset, `_micro`,
`_macro`: `lexsem.stats.seeds`), so a subset's interval is the same whichever other subsets
are summarized with it.

Inside `with ci_memo(store):` each interval is first looked up in `store` (an object with
`get_records` / `put_records`, as `lexsem.engine.request_store.RequestStore`), keyed by all it
is a function of: the hit vectors, the statistic, resamples, seed, confidence and the scipy and
numpy versions (whose random streams and percentile rules it follows). An interval computed
once is then read back, bit for bit, and a rerun whose intervals are all stored neither
resamples nor imports scipy.

Inside `with wilson_intervals():` (a human study's run: `lexsem.annotate.human_run`) each
proportion (a subset, the micro average) gets the Wilson score interval instead
(`lexsem.stats.wilson`: a few items all right give [51.0, 100.0] for 4/4, not the bootstrap's
[100, 100]), and the macro average, a mean of proportions, gets none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import numpy as np

from lexsem.stats.seeds import bootstrap_seed
from lexsem.stats.ties import Hits
from lexsem.stats.wilson import wilson_interval

MICRO = "_micro"
MACRO = "_macro"


@dataclass(frozen=True)
class Accuracy:
    subset: str  # a subset name, MICRO or MACRO
    n: int
    hits: int
    ties: int
    accuracy: float  # percent
    ci_low: float | None  # percent; None when not computed
    ci_high: float | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


_MEMO: ContextVar[Any] = ContextVar("lexsem_ci_memo", default=None)
_WILSON: ContextVar[bool] = ContextVar("lexsem_wilson_intervals", default=False)


@contextmanager
def ci_memo(store: Any) -> Iterator[None]:
    """Within the block, intervals are read from and written to `store` (None: not at all)."""
    token = _MEMO.set(store)
    try:
        yield
    finally:
        _MEMO.reset(token)


@contextmanager
def wilson_intervals() -> Iterator[None]:
    """Within the block, `summarize` gives proportions the Wilson score interval and the macro
    average no interval (a human study's run)."""
    token = _WILSON.set(True)
    try:
        yield
    finally:
        _WILSON.reset(token)


def _proportion_interval(
    samples: list[np.ndarray], n_boot: int, seed: int, confidence: float
) -> tuple[float, float] | tuple[None, None]:
    """The interval of the pooled hit rate of `samples`: Wilson inside `wilson_intervals`,
    else the percentile bootstrap (`confidence_interval`)."""
    if not _WILSON.get():
        return confidence_interval(samples, micro_mean, n_boot, seed, confidence)
    n = sum(len(s) for s in samples)
    found = wilson_interval(int(sum(s.sum() for s in samples)), n, confidence)
    return found if found is not None else (None, None)


@cache
def _versions() -> str:
    from importlib.metadata import version

    return f"scipy {version('scipy')}; numpy {np.__version__}"


def ci_key(
    samples: list[np.ndarray], statistic: Callable[..., Any], n_boot: int, seed: int,
    confidence: float,
) -> str:  # fmt: skip
    """The memo key of one interval: sha256 of everything the interval depends on."""
    h = hashlib.sha256(b"lexsem percentile bootstrap v1\x00")
    head = f"{statistic.__name__};{n_boot};{seed};{confidence!r};{_versions()};{len(samples)}"
    h.update(head.encode())
    for s in samples:
        x = np.ascontiguousarray(s, dtype=np.float64)
        h.update(f";{x.size};".encode())
        h.update(x.tobytes())
    return h.hexdigest()


def confidence_interval(
    samples: list[np.ndarray],
    statistic: Callable[..., Any],
    n_boot: int,
    seed: int,
    confidence: float,
) -> tuple[float, float] | tuple[None, None]:
    """The percentile bootstrap interval (percent) of `statistic` over `samples` (resampled
    within each), read from the memo of `ci_memo` when it holds it; (None, None) without
    resamples or with a sample of fewer than two items."""
    if n_boot <= 0 or any(len(s) < 2 for s in samples):
        return None, None
    memo = _MEMO.get()
    key = ci_key(samples, statistic, n_boot, seed, confidence) if memo is not None else None
    if key is not None:
        found = memo.get_records([key]).get(key)
        if isinstance(found, list) and len(found) == 2:
            return float(found[0]), float(found[1])
    lo, hi = _bootstrap(samples, statistic, n_boot, seed, confidence)
    if key is not None and np.isfinite([lo, hi]).all() and getattr(memo, "writable", True):
        memo.put_records([key], [[lo, hi]])
    return lo, hi


def _bootstrap(
    samples: list[np.ndarray], statistic, n_boot: int, seed: int, confidence: float
) -> tuple[float, float]:
    from scipy import stats

    res = stats.bootstrap(
        tuple(samples),
        statistic,
        n_resamples=n_boot,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        paired=False,
        random_state=np.random.default_rng(seed),
    )
    lo, hi = res.confidence_interval
    return float(lo) * 100.0, float(hi) * 100.0


def micro_mean(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    """The pooled hit rate of all items of `samples` (vectorized along `axis`)."""
    total = sum(s.sum(axis=axis) for s in samples)
    count = sum(s.shape[axis] for s in samples)
    return total / count


def macro_mean(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean of the samples' hit rates (vectorized along `axis`)."""
    return sum(s.mean(axis=axis) for s in samples) / len(samples)


def summarize(
    by_subset: Mapping[str, Hits],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    aggregates: bool = True,
) -> list[Accuracy]:
    """Accuracy per subset, then (when more than one subset) the micro and macro averages;
    each row's resamples are seeded by `bootstrap_seed(seed, row name)`."""
    out: list[Accuracy] = []
    samples = []
    for name, h in by_subset.items():
        x = np.asarray(h.hits, dtype=np.float64)
        samples.append(x)
        n = len(x)
        lo, hi = _proportion_interval([x], n_boot, bootstrap_seed(seed, name), confidence)
        out.append(
            Accuracy(
                name,
                n,
                int(x.sum()),
                int(h.ties.sum()),
                100.0 * float(x.mean()) if n else float("nan"),
                lo,
                hi,
            )
        )
    if aggregates and len(samples) > 1:
        n_all = sum(len(s) for s in samples)
        hits_all = int(sum(s.sum() for s in samples))
        ties_all = sum(int(h.ties.sum()) for h in by_subset.values())
        lo, hi = _proportion_interval(samples, n_boot, bootstrap_seed(seed, MICRO), confidence)
        out.append(Accuracy(MICRO, n_all, hits_all, ties_all, 100.0 * hits_all / n_all, lo, hi))
        macro = 100.0 * float(np.mean([s.mean() for s in samples]))
        lo, hi = (
            (None, None)
            if _WILSON.get()
            else confidence_interval(
                samples, macro_mean, n_boot, bootstrap_seed(seed, MACRO), confidence
            )
        )
        out.append(Accuracy(MACRO, n_all, hits_all, ties_all, macro, lo, hi))
    return out

"""Rank groups of a leaderboard table: models whose accuracies are not told apart share a group.

Every pair of the table's models is tested on the items both scored with the exact McNemar
test (`lexsem.stats.mcnemar`: two-sided binomial test of the discordant items, p = ½); the
p values of the table's k(k-1)/2 pairs are corrected together with Holm's step-down method
(Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statistics 1979),
which keeps the family-wise error rate at `alpha` without assuming the tests independent.

Groups as Demšar's critical-difference diagrams draw them (Demšar, "Statistical comparisons of
classifiers over multiple data sets", JMLR 2006): the models are sorted by accuracy (best
first, ties by name); a group is a maximal run of consecutive models of that list no two of
which differ significantly (a clique of "not different" that is an interval of the list, and
is contained in no longer such run). Each model belongs to one group or more (a model between
two groups may sit in both); the groups are lettered a, b, c... from the top. A model's rank is
1 + the position of the first model of its highest group: the best place it cannot be told
apart from. Models of the top group all get rank 1; "not significantly different" is not
transitive (A ~ B, B ~ C, A ≠ C), so two models that do not differ may still get different
ranks (B and C above): the groups, not the ranks, say which differences are significant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ALPHA", "RankGroups", "holm", "pairwise_mcnemar", "rank_groups"]

ALPHA = 0.05
MAX_MODELS = 500  # per table: the pairs grow as k²
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class RankGroups:
    """The models of one table, best first, with their accuracies (percent, on the paired
    items), rank, groups (lists of positions in `order`), each model's group letters, and the
    raw and Holm-corrected p value of every pair (i < j, positions in `order`)."""

    order: list[str]
    accuracy: list[float]
    n: int  # items every model scored (the paired items)
    rank: dict[str, int]
    groups: list[list[int]]
    letters: dict[str, str]
    p_raw: dict[tuple[int, int], float]
    p_holm: dict[tuple[int, int], float]
    alpha: float

    def different(self, a: str, b: str) -> bool:
        """Whether models `a` and `b` differ significantly (Holm-corrected)."""
        i, j = sorted((self.order.index(a), self.order.index(b)))
        return i != j and self.p_holm[(i, j)] < self.alpha


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-corrected p values, in the order given: the i-th smallest of m is multiplied by
    m - i + 1 (i from 1), made non-decreasing along that order and capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda k: p_values[k])
    out = [0.0] * m
    running = 0.0
    for step, k in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[k]))
        out[k] = running
    return out


def _label(k: int) -> str:
    """a..z, then aa, ab, ... (more than 26 groups)."""
    text = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        text = _LETTERS[r] + text
    return text


def pairwise_mcnemar(hits: np.ndarray) -> np.ndarray:
    """The exact two-sided McNemar p value of every pair of rows of `hits` (models × items,
    boolean): a symmetric matrix, 1.0 on the diagonal. Vectorised: p = min(1, 2·P(X ≤ min(b,
    c))), X ~ Binomial(b + c, ½), which is `mcnemar_exact(b, c)` (scipy's binomtest is
    symmetric at ½)."""
    from scipy import stats

    h = np.asarray(hits, dtype=np.int64)
    b = h @ (1 - h).T  # b[i, j]: i right, j wrong
    c = b.T
    low = np.minimum(b, c)
    p = np.minimum(1.0, 2.0 * stats.binom.cdf(low, b + c, 0.5))
    p[(b + c) == 0] = 1.0
    np.fill_diagonal(p, 1.0)
    return p


def rank_groups(hits: Mapping[str, np.ndarray], alpha: float = ALPHA) -> RankGroups:
    """The rank groups (module doc) of models given by their boolean hits on the same items,
    paired by position."""
    if not hits:
        raise ValueError("no model to rank")
    if len(hits) > MAX_MODELS:
        raise ValueError(f"{len(hits)} models in one table: at most {MAX_MODELS} are ranked")
    lengths = {len(np.asarray(v)) for v in hits.values()}
    if len(lengths) != 1:
        raise ValueError(f"paired hits must all have one length, not {sorted(lengths)}")
    n = lengths.pop()
    acc = {name: 100.0 * float(np.mean(v)) if n else 0.0 for name, v in hits.items()}
    order = sorted(hits, key=lambda name: (-acc[name], name))
    matrix = np.array([np.asarray(hits[name], dtype=bool) for name in order]).reshape(len(order), n)
    p = pairwise_mcnemar(matrix)
    pairs = [(i, j) for i in range(len(order)) for j in range(i + 1, len(order))]
    raw = {pair: float(p[pair]) for pair in pairs}
    corrected = dict(zip(pairs, holm([raw[q] for q in pairs]), strict=True))

    def same(i: int, j: int) -> bool:
        return i == j or corrected[(min(i, j), max(i, j))] >= alpha

    # the longest run starting at each position whose members are pairwise not different
    runs: list[list[int]] = []
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and all(same(k, end + 1) for k in range(start, end + 1)):
            end += 1
        run = list(range(start, end + 1))
        if not runs or run[-1] > runs[-1][-1]:  # not inside the run before it
            runs.append(run)
    letters = {name: "" for name in order}
    rank: dict[str, int] = {}
    for g, run in enumerate(runs):
        for k in run:
            letters[order[k]] += _label(g)
            rank.setdefault(order[k], run[0] + 1)
    return RankGroups(
        order=order, accuracy=[acc[name] for name in order], n=n, rank=rank, groups=runs,
        letters=letters, p_raw=raw, p_holm=corrected, alpha=alpha,
    )  # fmt: skip

"""Metric functions on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from lexsem.stats.bootstrap import MACRO, MICRO, summarize
from lexsem.stats.ties import Hits, beats
from lexsem.tasks.catalog import get_task
from lexsem.tasks.triplet import (
    S_P1_N,
    S_P1_P2,
    S_P2_N,
    SWAP,
    image_triplet_hits,
    reordered_negative_hits,
    text_triplet_hits,
)

# Five triplets, scores chosen by hand:
#   0: s12 .9 beats both           -> hit
#   1: s12 .5 < s1n .6             -> miss
#   2: s12 .5 < s2n .7             -> miss
#   3: s12 .5 == s1n .5 (tie)      -> miss (strict), hit (lenient: .5 >= .5 and .5 > .4)
#   4: s12 .3 below both           -> miss
S12 = np.array([0.9, 0.5, 0.5, 0.5, 0.3], dtype=np.float32)
S1N = np.array([0.1, 0.6, 0.2, 0.5, 0.4], dtype=np.float32)
S2N = np.array([0.2, 0.1, 0.7, 0.4, 0.5], dtype=np.float32)


def test_text_triplet_strict() -> None:
    h = text_triplet_hits(S12, S1N, S2N)
    assert h.hits.tolist() == [True, False, False, False, False]
    assert h.ties.tolist() == [False, False, False, True, False]


def test_text_triplet_lenient_counts_ties_as_hits() -> None:
    h = text_triplet_hits(S12, S1N, S2N, "lenient")
    assert h.hits.tolist() == [True, False, False, True, False]
    assert h.ties.sum() == 1


def test_unknown_tie_policy() -> None:
    with pytest.raises(ValueError, match="tie policy"):
        beats(S12, S1N, "half")  # type: ignore[arg-type]


def test_reordered_negative_hits_without_and_with_swap() -> None:
    # no swap: P1-N = s12 > s2n, P2-N = s12 > s1n
    p1n, p2n = reordered_negative_hits(S12, S1N, S2N, np.zeros(5, bool))
    assert p1n.hits.tolist() == [True, True, False, True, False]
    assert p2n.hits.tolist() == [True, False, True, False, False]
    # swap all: the roles of s1n and s2n trade places
    q1n, q2n = reordered_negative_hits(S12, S1N, S2N, np.ones(5, bool))
    assert q1n.hits.tolist() == p2n.hits.tolist()
    assert q2n.hits.tolist() == p1n.hits.tolist()


def test_image_triplet_hits() -> None:
    si1 = np.array([0.3, 0.3, 0.1])
    si2 = np.array([0.3, 0.1, 0.3])
    sin = np.array([0.2, 0.2, 0.2])
    both, p1, p2 = image_triplet_hits(si1, si2, sin)
    assert both.hits.tolist() == [True, False, False]
    assert p1.hits.tolist() == [True, True, False]
    assert p2.hits.tolist() == [True, False, True]


def test_t2t_task_columns() -> None:
    task = get_task("t2t")
    cols = {S_P1_P2: S12, S_P1_N: S1N, S_P2_N: S2N, SWAP: np.array([0, 1, 0, 0, 0], bool)}
    out = task.compute(cols, "strict")
    assert set(out) == {"t2t", "p1n", "p2n"}
    # item 1 swapped: P1-N compares s12 (.5) with the original s1n (.6) -> miss
    assert out["p1n"].hits.tolist() == [True, False, False, True, False]
    assert out["p2n"].hits.tolist() == [True, True, True, False, False]


def test_summarize_micro_macro_and_ci() -> None:
    a = Hits(np.array([1, 1, 1, 0], bool), np.array([0, 0, 0, 1], bool))  # 75 %
    b = Hits(np.array([1, 0], bool), np.zeros(2, bool))  # 50 %
    res = {r.subset: r for r in summarize({"a": a, "b": b}, n_boot=500, seed=3)}
    assert res["a"].accuracy == pytest.approx(75.0)
    assert res["b"].accuracy == pytest.approx(50.0)
    assert res[MICRO].accuracy == pytest.approx(100 * 4 / 6)
    assert res[MACRO].accuracy == pytest.approx(62.5)
    assert res["a"].ties == 1 and res[MICRO].ties == 1
    for r in res.values():
        assert r.ci_low is not None and r.ci_high is not None
        assert r.ci_low <= r.accuracy <= r.ci_high
    # seeded: identical on a rerun
    again = {r.subset: r for r in summarize({"a": a, "b": b}, n_boot=500, seed=3)}
    assert again[MICRO].ci_low == res[MICRO].ci_low


def test_bootstrap_ci_width_shrinks_with_n() -> None:
    rng = np.random.default_rng(0)
    small = Hits(rng.random(50) < 0.6, np.zeros(50, bool))
    large = Hits(rng.random(5000) < 0.6, np.zeros(5000, bool))
    (s,) = summarize({"s": small}, n_boot=400)
    (lg,) = summarize({"l": large}, n_boot=400)
    assert (lg.ci_high - lg.ci_low) < (s.ci_high - s.ci_low) / 4
    # the normal approximation of a binomial 95% interval: 1.96*sqrt(p(1-p)/n)
    half = 1.96 * np.sqrt(0.6 * 0.4 / 5000) * 100
    assert (lg.ci_high - lg.ci_low) / 2 == pytest.approx(half, rel=0.2)


def test_no_ci_when_disabled() -> None:
    (r,) = summarize({"a": Hits(np.ones(3, bool), np.zeros(3, bool))}, n_boot=0)
    assert r.ci_low is None and r.accuracy == 100.0

"""Agreement statistics (`lexsem.stats.agreement`) against published worked examples and hand
computations: Fleiss' κ on Wikipedia's 10 subjects × 14 raters table (0.210), Krippendorff's
α (nominal) on his canonical reliability data (0.743), Cohen's κ on a hand 2×2 table and
against scikit-learn; the per-kind / per-subset rows of an answers table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from builders.answers_table import answer, table
from lexsem.errors import DataError
from lexsem.stats.agreement import (
    ALL,
    GOLD,
    MISSING,
    agreement,
    bootstrap_interval,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    rating_matrix,
    raw_agreement,
)

# Fleiss' kappa, Wikipedia "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5
# categories; P-bar = 0.378, P-bar_e = 0.213, kappa = 0.210.
FLEISS_TABLE = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C (nominal data,
# four observers, twelve units, missing values): alpha = 0.743.
_ = None
KRIPP = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    "C": [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
}


def kripp_codes() -> np.ndarray:
    return np.array([[MISSING if v is None else v - 1 for v in col] for col in KRIPP.values()]).T


def alpha_by_coincidences(codes: np.ndarray) -> float:
    """Krippendorff's nominal alpha from the coincidence matrix, written out (his §C)."""
    k = int(codes.max()) + 1
    o = np.zeros((k, k))
    for unit in codes:
        vals = unit[unit != MISSING]
        m = len(vals)
        if m < 2:
            continue
        for i, a in enumerate(vals):
            for j, b in enumerate(vals):
                if i != j:
                    o[a, b] += 1.0 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = o.sum() - np.trace(o)
    d_e = (n * n - (n_c**2).sum()) / (n - 1)
    return 1.0 - (n - 1) * d_o / (n * n - (n_c**2).sum()) if d_e else math.nan


def test_fleiss_kappa_wikipedia_example() -> None:
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.210, abs=5e-4)
    # the same by hand: P_i, P-bar, p_j, P-bar_e
    n = 14
    p_i = ((FLEISS_TABLE**2).sum(axis=1) - n) / (n * (n - 1))
    p_j = FLEISS_TABLE.sum(axis=0) / FLEISS_TABLE.sum()
    assert p_i.mean() == pytest.approx(0.378, abs=5e-4)
    assert (p_j**2).sum() == pytest.approx(0.213, abs=5e-4)


def test_krippendorff_alpha_canonical_example() -> None:
    codes = kripp_codes()
    assert krippendorff_alpha(codes) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(codes) == pytest.approx(alpha_by_coincidences(codes), abs=1e-12)


def test_cohen_kappa_hand_two_by_two() -> None:
    # 50 cases: both yes 20, A yes B no 5, A no B yes 10, both no 15:
    # p_o = 35/50 = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4
    a = np.array([1] * 20 + [1] * 5 + [0] * 10 + [0] * 15)
    b = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15)
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)
    # a missing rating on either side leaves the item out
    assert cohen_kappa(np.append(a, MISSING), np.append(b, 1)) == pytest.approx(0.4, abs=1e-12)
    assert math.isnan(cohen_kappa(np.zeros(5, int), np.zeros(5, int)))  # p_e = 1: undefined


def test_cohen_kappa_equals_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    for _ in range(20):
        a = rng.integers(0, 4, 60)
        b = np.where(rng.random(60) < 0.6, a, rng.integers(0, 4, 60))
        assert cohen_kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b), abs=1e-12)


def test_fleiss_with_a_missing_rating_by_hand() -> None:
    # three items; item 3 has two ratings instead of three
    counts = np.array([[3, 0], [2, 1], [1, 1]])
    p_i = np.array([1.0, (4 + 1 - 3) / 6, (1 + 1 - 2) / 2])
    p_j = np.array([6, 2]) / 8
    expected = (p_i.mean() - (p_j**2).sum()) / (1 - (p_j**2).sum())
    assert fleiss_kappa(counts) == pytest.approx(expected, abs=1e-12)
    assert fleiss_kappa(np.array([[1, 0], [0, 1]])) != fleiss_kappa(np.array([[2, 0], [0, 2]]))


def _two_annotators() -> list[dict]:
    """Annotators x and y on six TOT items of subset s and four of subset t; z on two."""
    x = ["n", "n", "p1", "n", "p2", "n", "n", "n", "p1", "n"]
    y = ["n", "p1", "p1", "n", "p2", "n", "n", "p2", "p1", "n"]
    rows = []
    for k, (a, b) in enumerate(zip(x, y, strict=True)):
        sub = "s" if k < 6 else "t"
        rows += [answer("tot", str(k), w, v, subset=sub) for w, v in (("x", a), ("y", b))]
    rows += [answer("tot", "0", "z", "n"), answer("tot", "1", "z", "skip")]
    return rows


def test_agreement_rows_of_an_answers_table() -> None:
    rows = _two_annotators()
    rows.append(answer("tot", "p0", "x", "p1", practice=True))  # practice: left out
    rows.append(answer("tot", "p0", "y", "n", practice=True))
    rows += [answer("tot", "g", who, "n", gold=True) for who in ("x", "y")]
    res = agreement(table(rows), n_boot=200, seed=3)
    by = {(r.subset, r.statistic, r.pair): r for r in res}
    # subset s, pair x/y: labels by item: (n,n) (n,p1) (p1,p1) (n,n) (p2,p2) (n,n)
    xs = ["n", "n", "p1", "n", "p2", "n"]
    ys = ["n", "p1", "p1", "n", "p2", "n"]
    codes = {"n": 0, "p1": 1, "p2": 2}
    hand = cohen_kappa(np.array([codes[v] for v in xs]), np.array([codes[v] for v in ys]))
    pair = by[("s", "cohen_kappa", ("x", "y"))]
    assert pair.value == pytest.approx(hand) and pair.items == 6
    # z shares only item 0 with x and y (item 1 was skipped): fewer than two, no pair
    assert ("s", "cohen_kappa", ("x", "z")) not in by
    assert {r.subset for r in res} == {"s", "t", ALL, GOLD}
    assert by[(ALL, "cohen_kappa", ("x", "y"))].items == 10
    assert by[("s", "fleiss_kappa", None)].annotators == 3
    assert all(r.kind == "tot" for r in res)
    # the practice item is in no row; the gold item only in the gold rows
    assert by[(GOLD, "fleiss_kappa", None)].items == 1
    for r in res:
        if r.ci_low is not None and math.isfinite(r.value):
            assert r.ci_low <= r.value + 1e-9 and r.value - 1e-9 <= r.ci_high
    again = agreement(table(rows), n_boot=200, seed=3)
    assert repr([r.to_dict() for r in again]) == repr([r.to_dict() for r in res])  # seeded
    other = agreement(table(rows), n_boot=200, seed=4)
    assert [r.ci_low for r in other] != [r.ci_low for r in res]


def test_fleiss_and_alpha_rows_equal_the_statistics_on_the_matrix() -> None:
    rows = [
        answer("itt", str(u), who, f"o{v}", subset="s")
        for who, col in KRIPP.items()
        for u, v in enumerate(col)
        if v is not None
    ]
    res = {r.statistic: r for r in agreement(table(rows), n_boot=0)}
    assert res["krippendorff_alpha"].value == pytest.approx(0.743, abs=5e-4)
    assert res["krippendorff_alpha"].ci_low is None  # no resamples asked
    m = rating_matrix([(str(u), w, f"o{v}") for w, c in KRIPP.items()
                       for u, v in enumerate(c) if v is not None])  # fmt: skip
    keep = m.codes[(m.codes != MISSING).sum(axis=1) >= 2]
    counts = np.stack([(keep == j).sum(axis=1) for j in range(len(m.labels))], axis=1)
    assert res["fleiss_kappa"].value == pytest.approx(fleiss_kappa(counts))
    assert res["fleiss_kappa"].items == 11  # unit 12 has one rating


def test_best_of_k_is_read_as_image_or_none_as_bivlc() -> None:
    """BiVLC App. H.3: agreement on whether an image was chosen, not which one."""
    x = ["image0", "image1", "none", "image2", "none", "image0"]
    y = ["image1", "image1", "none", "image3", "image0", "image0"]
    rows = [answer("best_of_k", str(k), w, v) for k, p in enumerate(zip(x, y, strict=True))
            for w, v in zip("xy", p, strict=True)]  # fmt: skip
    (pair,) = [r for r in agreement(table(rows), n_boot=0) if r.statistic == "cohen_kappa"]
    binary = lambda v: int(v == "none")  # noqa: E731
    hand = cohen_kappa(np.array([binary(v) for v in x]), np.array([binary(v) for v in y]))
    assert pair.value == pytest.approx(hand)
    raw = agreement(table(rows), n_boot=0, best_of_k_as_image_or_none=False)
    assert next(r for r in raw if r.statistic == "cohen_kappa").value != pytest.approx(hand)


def test_bootstrap_interval_percentiles_by_hand() -> None:
    codes = np.array([[0, 0], [1, 1], [0, 1], [1, 1], [0, 0], [1, 0]])
    stat = lambda m: cohen_kappa(m[:, 0], m[:, 1])  # noqa: E731
    lo, hi = bootstrap_interval(codes, stat, 300, 11, 0.9)
    rng = np.random.default_rng(11)
    vals = np.array([stat(codes[rng.integers(0, 6, 6)]) for _ in range(300)])
    vals = vals[np.isfinite(vals)]
    assert (lo, hi) == pytest.approx(tuple(np.percentile(vals, [5, 95])))
    assert bootstrap_interval(codes[:1], stat, 300, 11, 0.9) == (None, None)


def test_two_answers_of_one_annotator_to_one_item_are_an_error() -> None:
    rows = [answer("tot", "1", "x", "n"), answer("tot", "1", "x", "p1")]
    with pytest.raises(DataError, match="annotator x answered item s/1 twice"):
        agreement(table(rows), n_boot=0)


def test_a_table_without_the_columns_is_refused() -> None:
    import pyarrow as pa

    with pytest.raises(DataError, match="no column 'kind'"):
        agreement(pa.table({"x": [1]}), where="a.parquet")


def test_raw_agreement_is_the_share_of_agreeing_pairs_beside_kappa() -> None:
    """Hand count: item 1 rated a, a, a (3 pairs, 3 agree), item 2 a, a, b (3 pairs, 1 agrees):
    4 of 6. And κ's paradox: 10 items, two annotators agreeing on 9 of them, one label almost
    always, gives raw agreement 0.9 while Cohen's and Fleiss' κ are at or below 0."""
    assert raw_agreement(np.array([[3, 0], [2, 1]])) == pytest.approx(4 / 6)
    assert np.isnan(raw_agreement(np.array([[1, 0]])))
    rows = [answer("tot", f"i{i}", "a", "p1") for i in range(10)]
    rows += [answer("tot", f"i{i}", "b", "p1" if i < 9 else "n") for i in range(10)]
    found = {r.statistic: r for r in agreement(table(rows), n_boot=50)}
    assert found["raw_agreement"].value == pytest.approx(0.9)
    assert found["raw_agreement"].items == 10
    assert found["cohen_kappa"].value <= 0 and found["fleiss_kappa"].value <= 0

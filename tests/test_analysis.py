"""Analyses over runs: linguistic priors (The Role of Linguistic Priors
in Measuring Compositional Generalization of Vision-Language Models), McNemar, cross-benchmark ranks
(SugarCrepe++ Table 6), qualitative cases (App. H). Hand-made runs with known answers, plus one
end-to-end test on the real data with MiniLM."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from builders.fakes import BagOfWordsEncoder
from builders.length_scorers import CharLengthScorer, WordCountScorer
from lexsem import evaluate
from lexsem.analysis.priors import (
    ORIENTED,
    RAW_LOWER,
    HardItems,
    blind_scores,
    hard_items,
    hard_test_accuracy,
    linguistic_gap,
    prior_map,
    score_gaps,
    scorer_lower_is_better,
)
from lexsem.analysis.qualitative import MIXED, case_names, qualitative_cases
from lexsem.analysis.run_comparison import (
    cross_benchmark,
    hits_by_item,
    mcnemar,
    results_frame,
)
from lexsem.benchmarks.load import load_benchmark
from lexsem.errors import LexsemError
from lexsem.models.protocols import fingerprint_key
from lexsem.results.run import Run
from lexsem.results.schema import BenchmarkInfo, Config, MetricResult, ModelInfo, RunRecord, Timings
from lexsem.stats.bootstrap import MICRO, summarize
from lexsem.stats.mcnemar import mcnemar_exact
from lexsem.stats.ties import Hits

B = "bench"
LM = {"backend": "lm", "model": "fake-lm"}  # a perplexity scorer's fingerprint (lower = better)

# -- building runs by hand ------------------------------------------------------------------------


def make_run(
    name: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    fingerprint: dict[str, Any] | None = None,
    skipped: Mapping[str, Mapping[str, list[str]]] | None = None,
) -> Run:
    """A Run from per-item rows (benchmark, subset, item_id, task, metric, hit, tie, scores...),
    with its record's results computed by `summarize` like `evaluate` does."""
    table = pa.Table.from_pylist([dict(r) for r in rows])
    fp = fingerprint or {"backend": "test", "name": name}
    results = []
    groups: dict[tuple[str, str, str], dict[str, list[bool]]] = {}
    for r in rows:
        g = groups.setdefault((r["benchmark"], r["task"], r["metric"]), {})
        g.setdefault(r["subset"], []).append(bool(r["hit"]))
    for (bench, task, metric), subs in groups.items():
        by = {s: Hits(np.array(h), np.zeros(len(h), bool)) for s, h in subs.items()}
        results += [
            MetricResult(benchmark=bench, task=task, metric=metric, **a.to_dict())
            for a in summarize(by, n_boot=0)
        ]
    benches = dict.fromkeys(r["benchmark"] for r in rows)
    record = RunRecord(
        lexsem_version="test",
        run_id=name,
        created_at="2024-01-01T00:00:00+00:00",
        model=ModelInfo(
            spec=name, name=name, fingerprint=fp, fingerprint_key=fingerprint_key(fp), batch_size=1
        ),
        benchmarks=[
            BenchmarkInfo(
                name=b,
                subsets=sorted({r["subset"] for r in rows if r["benchmark"] == b}),
                items={},
                files=[],
                skipped=dict((skipped or {}).get(b, {})),
            )
            for b in benches
        ],
        config=Config(
            tasks=sorted({r["task"] for r in rows}),
            tie_policy="strict",
            seed=0,
            n_boot=0,
            confidence=0.95,
        ),
        results=results,
        timings=Timings(
            total_s=0,
            load_data_s=0,
            encode_s=0,
            cache_s=0,
            metrics_s=0,
            n_texts_unique=0,
            n_texts_cached=0,
            n_texts_encoded=0,
        ),
    )
    return Run(record, table)


def model_rows(
    hits: Mapping[tuple[str, str], bool], metric: str = "tot", task: str | None = None, bench=B
) -> list[dict[str, Any]]:
    return [
        {
            "benchmark": bench,
            "subset": s,
            "item_id": i,
            "task": task or metric,
            "metric": metric,
            "hit": bool(h),
            "tie": False,
        }
        for (s, i), h in hits.items()
    ]


def blind_triplets(values: Mapping[tuple[str, str], tuple[float, float, float]], bench=B):
    return [
        {
            "benchmark": bench,
            "subset": s,
            "item_id": i,
            "task": "blind",
            "metric": "blind",
            "hit": p1 > n and p2 > n,
            "tie": p1 == n or p2 == n,
            "v_p1": float(p1),
            "v_p2": float(p2),
            "v_n": float(n),
        }
        for (s, i), (p1, p2, n) in values.items()
    ]


def blind_pairs(values: Mapping[tuple[str, str], tuple[float, float]], bench=B):
    return [
        {
            "benchmark": bench,
            "subset": s,
            "item_id": i,
            "task": "blind",
            "metric": "blind",
            "hit": pos > neg,
            "tie": pos == neg,
            "v_pos": float(pos),
            "v_neg": float(neg),
        }
        for (s, i), (pos, neg) in values.items()
    ]


# -- hard items -----------------------------------------------------------------------------------


def test_hard_items_single_run_strict_rule() -> None:
    rows = blind_triplets(
        {
            ("s", "easy"): (-1.0, -2.0, -3.0),  # N strictly worst
            ("s", "tie"): (-1.0, -3.0, -3.0),  # N ties P2: a miss under strict
            ("s", "nbest"): (-5.0, -4.0, -1.0),  # N the most plausible
            ("t", "half"): (-1.0, -6.0, -3.0),  # N beats P2 only
            ("t", "easy2"): (0.5, 0.7, 0.1),
        }
    )
    rows[1]["hit"] = True  # a lenient stored hit: hard_items re-decides with the strict rule
    run = make_run("gpt2", rows, fingerprint=LM)
    hard = hard_items(run, B)
    assert hard == {("s", "tie"), ("s", "nbest"), ("t", "half")}
    assert isinstance(hard, HardItems) and hard.benchmark == B
    assert len(hard.universe) == 5 and hard.blind_accuracy == pytest.approx(40.0)
    assert hard_items(run, B, tie_policy="lenient") == {("s", "nbest"), ("t", "half")}
    assert hard_items(run, B, subsets=["t"]) == {("t", "half")}
    assert scorer_lower_is_better(run) is True


def test_hard_items_avg_over_two_runs() -> None:
    # run 1 (PP_x: P 10/10, N 4) fails x; run 2 (P 2/2, N 12) solves it; the mean PP (6, 6, 8)
    # solves it. y: run 1 solves it narrowly (P 3/3, N 4), run 2 fails it badly (P 9/9, N 1):
    # mean (6, 6, 2.5) fails it. z: both solve it.
    pp1 = {("s", "x"): (10, 10, 4), ("s", "y"): (3, 3, 4), ("s", "z"): (1, 2, 9)}
    pp2 = {("s", "x"): (2, 2, 12), ("s", "y"): (9, 9, 1), ("s", "z"): (2, 1, 8)}

    def v(pp):
        return {k: tuple(-x for x in t) for k, t in pp.items()}  # oriented: v = −PP

    r1 = make_run("lm1", blind_triplets(v(pp1)), fingerprint={**LM, "model": "a"})
    r2 = make_run("lm2", blind_triplets(v(pp2)), fingerprint={**LM, "model": "b"})
    assert hard_items(r1, B) == {("s", "x")}
    assert hard_items(r2, B) == {("s", "y")}
    assert hard_items([r1, r2], B) == {("s", "y")}
    bs = blind_scores([r1, r2], B)
    assert bs.kind == "triplet" and bs.scorers == ("lm1", "lm2")
    assert bs.raw()[0].tolist() == [6.0, 6.0, 8.0]  # AVG_LM perplexities of x
    assert bs.values[1].tolist() == [-6.0, -6.0, -2.5]

    # an item one run skipped (non-finite score, recorded in its run) is left out of the average
    r3 = make_run(
        "lm3",
        blind_triplets({k: t for k, t in v(pp2).items() if k[1] != "z"}),
        fingerprint={**LM, "model": "c"},
        skipped={B: {"s": ["z"]}},
    )
    bs3 = blind_scores([r1, r3], B)
    assert bs3.dropped == (("s", "z"),) and len(bs3) == 2
    # ... any other difference is refused, naming the item
    r4 = make_run(
        "lm4",
        blind_triplets({k: t for k, t in v(pp2).items() if k[1] != "z"}),
        fingerprint={**LM, "model": "d"},
    )
    with pytest.raises(LexsemError, match=r"'lm4' lacks 1: s#z"):
        hard_items([r1, r4], B)


def test_blind_orientation_mixtures_refused() -> None:
    vals = {("s", "a"): (0.9, 0.8, 0.1)}
    lm = make_run("gpt2", blind_triplets(vals), fingerprint=LM)
    vera = make_run("vera", blind_triplets(vals), fingerprint={"backend": "vera", "model": "v"})
    custom = make_run("custom", blind_triplets(vals), fingerprint={"backend": "mine"})
    custom2 = make_run("custom2", blind_triplets(vals), fingerprint={"backend": "mine2"})
    assert scorer_lower_is_better(vera) is False and scorer_lower_is_better(custom) is None
    with pytest.raises(LexsemError, match=r"point different ways.*'gpt2' \(lower is better\)"):
        hard_items([lm, vera], B)
    with pytest.raises(LexsemError, match="pass lower_is_better"):
        hard_items([custom, custom2], B)
    assert hard_items([custom, custom2], B, lower_is_better=True) == set()
    assert hard_items(custom, B) == set()  # one run: its v is already oriented
    with pytest.raises(LexsemError, match="'vera' is higher is better"):
        hard_items(vera, B, lower_is_better=True)
    with pytest.raises(LexsemError, match="not a blind run"):
        hard_items(make_run("m", model_rows({("s", "a"): True})), B)


# -- hard test accuracy and linguistic gap ---------------------------------------------------------

HARD_CASE = {
    # (subset, id): (blind predictor wrong?, model hit)
    ("A", "a0"): (True, True),
    ("A", "a1"): (True, False),
    ("A", "a2"): (True, False),
    ("A", "a3"): (False, True),
    ("A", "a4"): (False, True),
    ("A", "a5"): (False, True),
    ("B", "b0"): (True, True),
    ("B", "b1"): (False, False),
    ("B", "b2"): (False, True),
    ("B", "b3"): (False, True),
}


def _hard_runs() -> tuple[Run, Run]:
    blind = make_run(
        "gpt2",
        blind_triplets(
            {k: (-9, -9, -1) if hard else (-1, -1, -9) for k, (hard, _) in HARD_CASE.items()}
        ),
        fingerprint=LM,
    )
    model = make_run("clip", model_rows({k: hit for k, (_, hit) in HARD_CASE.items()}))
    return blind, model


def test_hard_test_accuracy_and_gap_by_hand() -> None:
    blind, model = _hard_runs()
    hard = hard_items(blind, B)
    assert hard == {("A", "a0"), ("A", "a1"), ("A", "a2"), ("B", "b0")}
    ht = hard_test_accuracy(model, hard, B, n_boot=0)
    assert (ht.accuracy, ht.n, ht.hits, ht.metric) == (50.0, 4, 2, "tot")  # 2 of 4
    assert ht.ci_low is None
    assert ht.by_subset["A"].accuracy == pytest.approx(100 / 3)
    assert ht.by_subset["B"].accuracy == 100.0 and ht.by_subset["B"].n == 1
    gap = linguistic_gap(model, hard, n_boot=0)  # benchmark from the hard set
    o = gap.overall
    assert (o.subset, o.n, o.n_hard) == (MICRO, 10, 4)
    assert (o.accuracy, o.hard_accuracy, o.gap) == pytest.approx((70.0, 50.0, 20.0))
    a, b = gap.by_subset["A"], gap.by_subset["B"]
    assert a.gap == pytest.approx(400 / 6 - 100 / 3)  # 66.67 − 33.33
    assert b.gap == pytest.approx(75.0 - 100.0)
    # with the bootstrap: CIs, the overall one around the point estimate
    ht2 = hard_test_accuracy(model, hard, B, n_boot=300, seed=1)
    assert ht2.ci_low is not None and ht2.ci_low <= 50.0 <= ht2.ci_high
    g2 = linguistic_gap(model, hard, B, n_boot=300, seed=1).overall
    assert g2.ci_low is not None and g2.ci_low <= 20.0 <= g2.ci_high
    # a plain set of keys works too (universe: all the model's items)
    assert linguistic_gap(model, set(hard), B, n_boot=0).overall.gap == pytest.approx(20.0)


def test_hard_test_refuses_uncovered_items() -> None:
    blind, _ = _hard_runs()
    hard = hard_items(blind, B)
    partial = make_run(
        "partial", model_rows({k: h for k, (_, h) in HARD_CASE.items() if k != ("B", "b0")})
    )
    with pytest.raises(LexsemError, match=r"does not cover 1 of the 4 hard items.*B#b0"):
        hard_test_accuracy(partial, hard)
    with pytest.raises(LexsemError, match=r"does not cover 1 of the 10 items.*B#b0"):
        linguistic_gap(partial, hard)
    with pytest.raises(LexsemError, match="hard items are of 'bench', not 'other'"):
        hard_test_accuracy(partial, hard, "other")
    with pytest.raises(LexsemError, match="no metric 'itt'"):
        hard_test_accuracy(partial, hard, B, "itt")


# -- prior map ------------------------------------------------------------------------------------


def test_prior_map_on_a_crafted_grid() -> None:
    # PP of true / false caption; both ranges are exactly [0, 10] -> unit-width bins
    pp: dict[tuple[str, str], tuple[float, float]] = {}
    hits: dict[tuple[str, str], bool] = {}
    for j in range(12):  # block (0, 9): true PP in [0, 1), false PP in [9, 10]; 9 of 12 hits
        pp["s", f"tl{j}"] = (0.0 if j == 0 else 0.5, 10.0 if j == 0 else 9.5)
        hits["s", f"tl{j}"] = j < 9
    for j in range(5):  # block (5, 5): 5 items, under min_items
        pp["s", f"mid{j}"] = (5.2, 5.7)
        hits["s", f"mid{j}"] = True
    pp["s", "max"] = (10.0, 0.0)  # the maxima fall in the last bin: block (9, 0)
    hits["s", "max"] = False
    blind = make_run("gpt2", blind_pairs({k: (-t, -f) for k, (t, f) in pp.items()}), fingerprint=LM)
    model = make_run("clip", model_rows(hits, metric="acc", task="pair"))
    pm = prior_map(blind, model, B)
    assert pm.scale == RAW_LOWER and pm.metric == "acc" and pm.n_items == 18
    np.testing.assert_allclose(pm.true_edges, np.linspace(0, 10, 11))
    np.testing.assert_allclose(pm.false_edges, np.linspace(0, 10, 11))
    assert pm.counts.sum() == 18 and pm.counts[0, 9] == 12 and pm.counts[5, 5] == 5
    assert pm.counts[9, 0] == 1 and pm.hits[0, 9] == 9
    assert pm.accuracy[0, 9] == pytest.approx(75.0)
    assert np.isnan(pm.accuracy[5, 5]) and np.isnan(pm.accuracy[9, 0])
    assert np.isnan(pm.accuracy).sum() == 99
    small = prior_map(blind, model, B, min_items=5)
    assert small.accuracy[5, 5] == 100.0 and np.isnan(small.accuracy[9, 0])
    oriented = prior_map(blind, model, B, scale="oriented")
    assert oriented.scale == ORIENTED and oriented.counts[9, 0] == 12  # axes flipped: v = −PP
    with pytest.raises(LexsemError, match="does not cover 1 of the 18 blind-scored items"):
        prior_map(blind, make_run("m", model_rows({k: True for k in hits if k[1] != "max"})), B)


def test_triplet_true_caption_is_mean_of_positives() -> None:
    blind = make_run("gpt2", blind_triplets({("s", "a"): (-2.0, -4.0, -5.0)}), fingerprint=LM)
    t, f = blind_scores(blind, B).true_false()
    assert (t[0], f[0]) == (3.0, 5.0)  # PP: mean(2, 4) vs 5


# -- score gaps -----------------------------------------------------------------------------------


def test_score_gaps() -> None:
    vals = {("s", "a"): (0.9, 0.7, 0.2), ("s", "b"): (0.1, 0.3, 0.4), ("t", "c"): (0.5, 0.5, 0.5)}
    run = make_run("vera", blind_triplets(vals), fingerprint={"backend": "vera", "model": "v"})
    sg = score_gaps(run, B)
    np.testing.assert_allclose(sg.gap, [0.6, -0.2, 0.0])  # ½(P1 + P2) − N
    assert sg.summary.mean == pytest.approx(0.4 / 3) and sg.summary.median == pytest.approx(0.0)
    assert sg.summary.frac_positive == pytest.approx(1 / 3)
    assert sg.summary.frac_zero == pytest.approx(1 / 3)
    assert sg.by_subset["s"].n == 2 and sg.by_subset["t"].mean == 0.0
    pairs = make_run(
        "lm", blind_pairs({("s", "a"): (-2.0, -5.0), ("s", "b"): (-3.0, -1.0)}), fingerprint=LM
    )
    np.testing.assert_allclose(score_gaps(pairs, B).gap, [3.0, -2.0])  # V(C+) − V(C−), v = −PP


# -- McNemar --------------------------------------------------------------------------------------


def test_mcnemar_exact_by_hand() -> None:
    # 8 items A right / B wrong, 2 the reverse, 5 both right, 3 both wrong
    pattern = [(True, False)] * 8 + [(False, True)] * 2 + [(True, True)] * 5 + [(False, False)] * 3
    a = make_run("a", model_rows({("s", str(i)): x for i, (x, _) in enumerate(pattern)}))
    b = make_run("b", model_rows({("s", str(i)): y for i, (_, y) in enumerate(pattern)}))
    res = mcnemar(a, b, B, "tot")
    assert (res.b, res.c, res.n, res.statistic) == (8, 2, 18, 2.0)
    expected = 2 * sum(math.comb(10, k) for k in range(3)) / 2**10  # = 0.109375
    assert res.p_value == pytest.approx(expected, abs=1e-12)
    assert res.accuracy_a == pytest.approx(100 * 13 / 18)
    assert (res.hits_a, res.hits_b) == (13, 7)
    assert mcnemar(b, a, B).p_value == pytest.approx(0.109375, abs=1e-12)  # symmetric
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar(a, a, B).p_value == 1.0
    short = make_run("short", model_rows({("s", str(i)): True for i in range(17)}))
    with pytest.raises(LexsemError, match=r"different items.*1 items only in 'a': s#17"):
        mcnemar(a, short, B)


# -- cross-benchmark ranks ------------------------------------------------------------------------


def _acc_rows(bench: str, metric: str, acc: int) -> list[dict[str, Any]]:
    return model_rows({("s", str(i)): i < acc // 10 for i in range(10)}, metric=metric, bench=bench)


def test_cross_benchmark_ranks_arrows_and_correlations() -> None:
    accs = {"m1": (50, 40), "m2": (70, 30), "m3": (60, 80)}
    runs = []
    for name, (a, b) in accs.items():
        fp = {"backend": "test", "name": name}
        # each model's two numbers come from two runs of the same model (same fingerprint)
        runs.append(make_run(name, _acc_rows("sc", "acc", a), fingerprint=fp))
        runs.append(make_run(name, _acc_rows("scpp", "itt", b), fingerprint=fp))
    runs.append(make_run("only_a", _acc_rows("sc", "acc", 90)))
    cb = cross_benchmark(runs, ("sc", "acc", None), ("scpp", "itt", "s"), baseline="m1")
    t = cb.table.set_index("model")
    assert list(t.index) == ["m1", "m2", "m3"] and cb.left_out == ("only_a",)
    assert t["acc_a"].tolist() == [50.0, 70.0, 60.0] and t["acc_b"].tolist() == [40.0, 30.0, 80.0]
    assert t["rank_a"].tolist() == [3, 1, 2] and t["rank_b"].tolist() == [2, 3, 1]
    assert t["rank_change"].tolist() == [1, -2, 1]
    assert t["vs_baseline_a"].tolist() == ["", "↑", "↑"]
    assert t["vs_baseline_b"].tolist() == ["", "↓", "↑"]
    assert t["flip"].tolist() == [False, True, False]
    # Spearman: rank differences (−1, 2, −1): 1 − 6·6 / (3·8) = −0.5; Kendall: 1 concordant,
    # 2 discordant pairs of 3: −1/3
    assert cb.spearman == pytest.approx(-0.5) and cb.kendall == pytest.approx(-1 / 3)
    with pytest.raises(LexsemError, match="baseline 'nope'"):
        cross_benchmark(runs, ("sc", "acc"), ("scpp", "itt"), baseline="nope")
    cb_default = cross_benchmark(runs, ("sc", "acc"), ("scpp", "itt"))
    assert cb_default.baseline == "m1"


def test_cross_benchmark_refuses_runs_on_different_data() -> None:
    """Two runs whose `sc` files differ (same name, other content) are not ranked together."""
    from lexsem.results.schema import BenchmarkInfo, FileInfo

    runs = [make_run(name, _acc_rows("sc", "acc", a)) for name, a in (("m1", 50), ("m2", 70))]
    runs += [make_run(name, _acc_rows("scpp", "itt", b)) for name, b in (("m1", 40), ("m2", 30))]
    for run, sha in zip(runs[:2], ("a" * 64, "b" * 64), strict=True):
        run.record.benchmarks = [
            BenchmarkInfo(name="sc", subsets=["s"], items={"s": 10},
                          files=[FileInfo(subset="s", file="sc.json", sha256=sha)])
        ]  # fmt: skip
    with pytest.raises(LexsemError, match=r"not ranked together: sc/s was read from different"):
        cross_benchmark(runs, ("sc", "acc"), ("scpp", "itt"))
    runs[1].record.benchmarks[0].files[0].sha256 = "a" * 64  # the same file: ranked
    assert len(cross_benchmark(runs, ("sc", "acc"), ("scpp", "itt")).table) >= 1


def test_results_frame() -> None:
    runs = [
        evaluate(BagOfWordsEncoder(name="bow"), ["synthetic/swap_obj,replace_att"], n_boot=50),
        evaluate(BagOfWordsEncoder(dim=8, name="bow8"), ["synthetic/swap_obj"], n_boot=0),
    ]
    df = results_frame(runs)
    assert len(df) == len(runs[0].record.results) + len(runs[1].record.results)
    row = df[(df.model == "bow") & (df.subset == MICRO)].iloc[0]
    assert row["accuracy"] == pytest.approx(runs[0].accuracy("synthetic", "tot"))
    assert row["ci_low"] <= row["accuracy"] <= row["ci_high"] and row["n"] == 200
    assert set(df[df.model == "bow8"]["subset"]) == {"swap_obj"}


# -- qualitative ----------------------------------------------------------------------------------


def test_qualitative_cases_on_crafted_hits() -> None:
    items = load_benchmark("synthetic/swap_obj").items[:4]
    keys = [(it.subset, it.id) for it in items]
    # per item: (itt, tot) hits of models m1, m2, m3
    table = [
        [(1, 0), (1, 0), (0, 0)],  # most pass ITT, fail TOT (App. H.2)
        [(0, 1), (0, 1), (0, 1)],  # all pass TOT, fail ITT (H.3)
        [(0, 0), (0, 0), (1, 1)],  # most fail both (H.1)
        [(1, 1), (1, 0), (0, 1)],  # no majority
    ]

    def hits(m: int, which: int) -> dict[tuple[str, str], bool]:
        return {k: bool(table[i][m][which]) for i, k in enumerate(keys)}

    fp1 = {"backend": "test", "name": "m1"}
    runs = [  # m1: ITT and TOT in two runs; m2, m3: one run each with both tasks
        make_run("m1", model_rows(hits(0, 0), "itt", bench="synthetic"), fingerprint=fp1),
        make_run("m1", model_rows(hits(0, 1), "tot", bench="synthetic"), fingerprint=fp1),
    ] + [
        make_run(
            f"m{m + 1}",
            model_rows(hits(m, 0), "itt", bench="synthetic")
            + model_rows(hits(m, 1), "tot", bench="synthetic"),
        )
        for m in (1, 2)
    ]
    a_only, b_only, _both, neither = case_names("itt", "tot")
    df = qualitative_cases(runs, "synthetic")
    assert df["case"].tolist() == [a_only, b_only, neither, MIXED]
    assert df.attrs["models"] == ["m1", "m2", "m3"]
    assert df["p1"].tolist() == [it.p1 for it in items] and df["n"].iloc[0] == items[0].n
    np.testing.assert_allclose(df["frac_pass_itt"], [2 / 3, 0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(df["frac_pass_tot"], [0, 1, 1 / 3, 2 / 3])
    np.testing.assert_allclose(df[f"frac_{a_only}"], [2 / 3, 0, 0, 1 / 3])
    assert df["n_models_both"].tolist() == [3, 3, 3, 3]
    strict = qualitative_cases(runs, "synthetic", threshold=1.0, captions=False)
    assert strict["case"].tolist() == [MIXED, b_only, MIXED, MIXED] and "p1" not in strict
    only = qualitative_cases(runs, "synthetic", case=a_only)
    assert only["item_id"].tolist() == [keys[0][1]]
    # a model lacking an item is refused unless allow_partial
    short = make_run(
        "m4",
        model_rows(dict(list(hits(0, 0).items())[:3]), "itt", bench="synthetic")
        + model_rows(dict(list(hits(0, 1).items())[:3]), "tot", bench="synthetic"),
    )
    with pytest.raises(LexsemError, match=f"'m4' synthetic/itt lacks 1 items.*{keys[3][1]}"):
        qualitative_cases([*runs, short], "synthetic")
    part = qualitative_cases([*runs, short], "synthetic", allow_partial=True, captions=False)
    assert part["n_models_both"].tolist() == [4, 4, 4, 3]
    with pytest.raises(LexsemError, match="no model has both"):
        qualitative_cases(runs[:1], "synthetic")


# -- end to end: real data, real MiniLM ---------------------------------------------------------


BENCHES = ["sugarcrepe_pp", "visla_generic"]


@pytest.fixture(scope="module")
def real_runs(
    test_data_dir: Path, minilm_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Run]:
    cache = tmp_path_factory.mktemp("analysis-cache")  # module scope: set the cache explicitly
    common: dict[str, Any] = {
        "data_dir": test_data_dir,
        "n_boot": 0,
        "cache_dir": cache,
        "offline": True,
    }
    return {
        "minilm": evaluate("minilm", BENCHES, **common),
        "bow64": evaluate(BagOfWordsEncoder(dim=64, name="bow64"), BENCHES, **common),
        "bow512": evaluate(BagOfWordsEncoder(dim=512, name="bow512"), BENCHES, **common),
        "charlen": evaluate(CharLengthScorer(), BENCHES, **common),
        "words": evaluate(WordCountScorer(), BENCHES, **common),
    }


@pytest.mark.data
def test_end_to_end_on_real_data(real_runs: dict[str, Run], test_data_dir: Path) -> None:
    minilm, bow64, bow512 = real_runs["minilm"], real_runs["bow64"], real_runs["bow512"]
    charlen, words = real_runs["charlen"], real_runs["words"]
    scpp = load_benchmark("sugarcrepe_pp", data_dir=test_data_dir).items
    assert minilm.accuracy("sugarcrepe_pp", "tot", "swap_obj") == pytest.approx(14.29, abs=0.005)

    # hard items: N not strictly the longest text (one scorer), or by mean(len, words) (AVG)
    hard = hard_items(charlen, "sugarcrepe_pp")
    assert hard == {
        (it.subset, it.id) for it in scpp if not (len(it.n) > max(len(it.p1), len(it.p2)))
    }
    assert len(hard.universe) == 4757 and 0 < len(hard) < 4757

    def avg(t: str) -> float:
        return (len(t) + len(t.split())) / 2

    hard_avg = hard_items([charlen, words], "sugarcrepe_pp")
    assert hard_avg == {
        (it.subset, it.id) for it in scpp if not avg(it.n) > max(avg(it.p1), avg(it.p2))
    }

    # hard-test accuracy and linguistic gap, checked against the per-item hits
    h = hits_by_item(minilm, "sugarcrepe_pp", "tot")
    mask = np.array([k in hard for k in h.item_keys()])
    ht = hard_test_accuracy(minilm, hard, "sugarcrepe_pp", n_boot=200)
    assert ht.metric == "tot" and ht.n == len(hard)
    assert ht.accuracy == pytest.approx(100 * h.hit[mask].mean())
    assert ht.ci_low is not None and ht.ci_low <= ht.accuracy <= ht.ci_high
    assert set(ht.by_subset) >= {"swap_obj", "replace_rel", MICRO}
    gap = linguistic_gap(minilm, hard, n_boot=200)
    assert gap.overall.accuracy == pytest.approx(minilm.accuracy("sugarcrepe_pp", "tot"))
    assert gap.overall.gap == pytest.approx(gap.overall.accuracy - ht.accuracy)
    assert len(gap.rows) == 6

    # prior map over char length (the "perplexity" axis)
    pm = prior_map(charlen, minilm, "sugarcrepe_pp")
    assert pm.counts.sum() == 4757 and pm.scale == RAW_LOWER
    assert pm.true_edges[0] == min((len(it.p1) + len(it.p2)) / 2 for it in scpp)
    assert pm.false_edges[-1] == max(len(it.n) for it in scpp)
    full = pm.counts >= 10
    np.testing.assert_allclose(pm.accuracy[full], 100 * pm.hits[full] / pm.counts[full])
    assert np.isnan(pm.accuracy[~full]).all() and full.any()

    # score gaps on VISLA (oriented: v = −length)
    visla = {it.id: it for it in load_benchmark("visla_generic", data_dir=test_data_dir).items}
    sg = score_gaps(charlen, "visla_generic")
    want = [len(visla[i].n) - (len(visla[i].p1) + len(visla[i].p2)) / 2 for i in sg.item_id]
    np.testing.assert_allclose(sg.gap, want)
    assert sg.summary.n == 973 and sg.summary.mean == pytest.approx(np.mean(want))

    # McNemar: MiniLM vs a bag of words on the same items
    mc = mcnemar(minilm, bow64, "sugarcrepe_pp", "tot")
    hb = hits_by_item(bow64, "sugarcrepe_pp", "tot").take(h.item_keys())
    assert (mc.b, mc.c, mc.n) == (int(np.sum(h.hit & ~hb.hit)), int(np.sum(~h.hit & hb.hit)), 4757)
    from scipy import stats

    assert mc.b + mc.c > 0
    assert mc.p_value == pytest.approx(stats.binomtest(mc.b, mc.b + mc.c).pvalue, rel=1e-9)

    # cross-benchmark: SC++ TOT vs VISLA T2T over three models
    cb = cross_benchmark(
        [minilm, bow64, bow512],
        ("sugarcrepe_pp", "tot", None),
        ("visla_generic", "t2t", None),
        baseline="bow64",
    )
    t = cb.table.set_index("model")
    assert len(t) == 3 and t.loc["bow64", "vs_baseline_a"] == ""
    name = minilm.record.model.name
    assert t.loc[name, "acc_a"] == pytest.approx(minilm.accuracy("sugarcrepe_pp", "tot"))
    assert t.loc[name, "acc_b"] == pytest.approx(minilm.accuracy("visla_generic", "t2t"))
    for col, rank in (("acc_a", "rank_a"), ("acc_b", "rank_b")):  # 1 + models strictly better
        assert list(t[rank]) == [1 + int((t[col] > v).sum()) for v in t[col]]
    rho = np.corrcoef(stats.rankdata(t["acc_a"]), stats.rankdata(t["acc_b"]))[0, 1]
    assert cb.spearman == pytest.approx(rho)

    # qualitative: no images offline, so the two VISLA text metrics play ITT and TOT
    q = qualitative_cases(
        [minilm, bow64, bow512],
        "visla_generic",
        metric_a="p1n",
        metric_b="p2n",
        data_dir=test_data_dir,
    )
    assert len(q) == 973 and q["n_models_both"].eq(3).all()
    assert q["p1"].tolist() == [visla[i].p1 for i in q["item_id"]]
    names = case_names("p1n", "p2n")
    fracs = q[[f"frac_{c}" for c in names]].to_numpy()
    np.testing.assert_allclose(fracs.sum(axis=1), 1.0)
    assert set(q["case"]) <= {*names, MIXED}
    p1n = hits_by_item(minilm, "visla_generic", "p1n")
    assert q["frac_pass_p1n"].mean() == pytest.approx(
        np.mean(
            [hits_by_item(r, "visla_generic", "p1n").hit.mean() for r in (minilm, bow64, bow512)]
        )
    )
    assert len(p1n) == 973

    frame = results_frame([minilm, bow64, bow512, charlen])
    assert set(frame["model"]) == {minilm.record.model.name, "bow64", "bow512", "charlen"}


@pytest.mark.data
def test_html_report_on_real_data(real_runs: dict[str, Run], test_data_dir: Path) -> None:
    """The whole report on the real SugarCrepe++ and VISLA files: MiniLM and two bag-of-words
    models, blind runs of two length scorers (their AVG is the blind predictor)."""
    from builders.report_pages import parse
    from lexsem.report.analyses import ReportOptions, build_report

    runs = list(real_runs.values())
    page = build_report(runs, ReportOptions(data_dir=test_data_dir, n_boot=100))
    doc = parse(page)
    heads = " | ".join(doc.headings)
    for title in ("Linguistic priors", "Lexical and syntactic similarity", "Comparing runs",
                  "Qualitative cases", "Metadata"):  # fmt: skip
        assert title in heads
    for bench in BENCHES:
        assert f"{bench}: hard-test accuracy" in " ".join(t["caption"] for t in doc.tables)
        assert f"{bench}: lexical similarity per caption pair" in page
    hard = hard_items([real_runs["charlen"], real_runs["words"]], "sugarcrepe_pp")
    gap = linguistic_gap(real_runs["minilm"], hard, "sugarcrepe_pp", "tot", n_boot=100)
    (table,) = [t for t in doc.tables if "sugarcrepe_pp: hard-test" in t["caption"]]
    minilm = real_runs["minilm"].record.model.name
    row = next(r for r in table["rows"] if r[0] == minilm)
    # SC++ TOT over all 4757 items: the hits implied by the published per-subset numbers
    published = {"swap_obj": (14.29, 245), "swap_att": (22.52, 666), "replace_obj": (93.95, 1652),
                 "replace_att": (64.97, 788), "replace_rel": (63.94, 1406)}  # fmt: skip
    hits = sum(round(p * n / 100) for p, n in published.values())
    assert row[2] == f"{gap.overall.accuracy:.2f}" == f"{100 * hits / 4757:.2f}"
    assert row[3].startswith(f"{gap.hard.accuracy:.2f} [")
    # VISLA generic: the cross-benchmark table and the P1-N vs P2-N qualitative cases
    assert any("Cross-benchmark: sugarcrepe_pp TOT vs visla_generic T2T" in t["caption"]
               for t in doc.tables)  # fmt: skip
    assert any("visla_generic: items per case" in t["caption"] for t in doc.tables)
    assert len(doc.imgs) >= 12

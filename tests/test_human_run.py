"""A human study's answers as a run folder (`lexsem.annotate.human_run`): per-item hits under
the benchmark's tasks, BiVLC's combination of I2T and T2I queries (Table 2: 90.40 / 93.00 /
86.80), majority and ties, practice / gold / skip / unknown items, and the human row in
`report`, `report --html` and `compare` (McNemar against a model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from builders.answers_table import answer, table
from builders.fakes import TRIPLETS, BagOfWordsEncoder, scpp_user_files
from builders.hf_parquet import BIVLC_ROWS, bivlc_columns, write_parquet
from lexsem.annotate.human_run import human_run
from lexsem.cli import app
from lexsem.config import EvalConfig
from lexsem.errors import DataError, LexsemError
from lexsem.evaluator import Evaluator
from lexsem.results.run import Run
from lexsem.stats.bootstrap import MACRO, MICRO
from lexsem.stats.wilson import wilson_interval
from lexsem.tasks.catalog import get_task
from lexsem.tasks.voted import voted_task


@pytest.fixture
def scpp(tmp_path: Path) -> str:
    sel, _ = scpp_user_files(tmp_path)
    return sel


def _acc(run: Run, task: str, subset: str = MICRO) -> float:
    return next(r for r in run.record.results if r.task == task and r.subset == subset).accuracy


def test_one_annotator_per_item_gives_the_papers_accuracy(scpp: str, tmp_path: Path) -> None:
    """SugarCrepe++ §3: each student answers their own items; accuracy = right / answered."""
    rows = []
    for sub, items in TRIPLETS.items():
        for i in range(len(items)):
            who = "a" if sub == "swap_obj" else "b"
            rows.append(answer("tot", str(i), who, "n", subset=sub, benchmark=scpp))
            wrong = sub == "swap_obj" and i == 0
            rows.append(answer("itt", str(i), who, "p1" if wrong else "n", subset=sub,
                               benchmark=scpp))  # fmt: skip
    rows.append(answer("itt", "0", "b", "p2", subset="swap_obj", benchmark=scpp, practice=True))
    h = human_run(table(rows), n_boot=50, cache_dir=tmp_path / "c")
    run = h.run
    assert run.record.model.name == "human" and run.record.model.spec == "human:st"
    assert sorted(run.record.config.tasks) == ["itt", "tot"]
    assert _acc(run, "tot") == 100.0
    assert _acc(run, "itt") == pytest.approx(100 * 4 / 5)  # swap_obj item 0 wrong
    assert _acc(run, "itt", "swap_obj") == pytest.approx(100 * 2 / 3)
    itt = [r for r in run.items.to_pylist() if r["task"] == "itt"]
    assert {(r["subset"], r["item_id"]): r["hit"] for r in itt}[("swap_obj", "0")] is False
    assert {r["metric"] for r in itt} == {"itt"}  # the main metric only
    micro = run.record.result("scpp:triplets", "itt", MICRO)
    assert micro.ci_low is not None and micro.ci_low <= micro.accuracy <= micro.ci_high
    assert (micro.items_scored, micro.items_total) == (5, 5)
    # the answer-level accuracy of the kind over all its answers (practice left out)
    level = {(a.kind, a.subset): a for a in h.answer_level}
    assert (level[("itt", "_all")].answers, level[("itt", "_all")].right) == (5, 4)


def test_majority_and_ties_follow_the_tie_policy(scpp: str, tmp_path: Path) -> None:
    """Votes per query: 2 of 3 right a hit, 1 of 3 a failure, 1 of 2 a tie (a hit only under
    the lenient policy), compared by the task's reading as two scores are."""
    tot = voted_task(get_task("tot"))
    votes = {"right_tot": np.array([2.0, 1.0, 1.0]), "wrong_tot": np.array([1.0, 2.0, 1.0])}
    strict_hits = tot.compute(votes, "strict")["tot"]
    assert strict_hits.hits.tolist() == [True, False, False]
    assert strict_hits.ties.tolist() == [False, False, True]
    assert tot.compute(votes, "lenient")["tot"].hits.tolist() == [True, False, True]
    rows = [
        answer("tot", "0", "a", "n", subset="swap_obj", benchmark=scpp),
        answer("tot", "0", "b", "p1", subset="swap_obj", benchmark=scpp),  # split: a tie
        answer("tot", "1", "a", "n", subset="swap_obj", benchmark=scpp),
        answer("tot", "1", "b", "n", subset="swap_obj", benchmark=scpp),
        answer("tot", "1", "c", "p2", subset="swap_obj", benchmark=scpp),  # 2 of 3 right
    ]
    strict = human_run(table(rows), n_boot=0, cache_dir=tmp_path / "c").run
    by = {r["item_id"]: r for r in strict.items.to_pylist()}
    # the Evaluator's item table: the task's columns, here the votes on the item's question
    assert (by["0"]["hit"], by["0"]["tie"], by["0"]["right_tot"], by["0"]["wrong_tot"]) == (
        False, True, 1.0, 1.0)  # fmt: skip
    assert (by["1"]["right_tot"], by["1"]["wrong_tot"]) == (2.0, 1.0)
    assert (by["1"]["hit"], by["1"]["tie"]) == (True, False)
    assert _acc(strict, "tot", "swap_obj") == 50.0
    lenient = human_run(table(rows), n_boot=0, tie_policy="lenient", cache_dir=tmp_path / "c")
    assert _acc(lenient.run, "tot", "swap_obj") == 100.0
    # coverage: 2 of the 3 items of swap_obj, none of replace_att
    row = strict.record.result("scpp:triplets", "tot", "swap_obj")
    assert (row.items_scored, row.items_total) == (2, 3)
    assert strict.record.recorded is not None
    assert strict.record.recorded.items_answered == {"swap_obj": 2, "replace_att": 0}


def test_gold_skip_unknown_and_construction_kinds_stay_out(scpp: str, tmp_path: Path) -> None:
    rows = [
        answer("tot", "0", "a", "n", subset="swap_obj", benchmark=scpp),
        answer("tot", "1", "a", "skip", subset="swap_obj", benchmark=scpp, correct=False),
        answer("tot", "2", "a", "p1", subset="swap_obj", benchmark=scpp, gold=True),
        answer("tot", "2", "b", "n", subset="swap_obj", benchmark=scpp, gold=True),
        answer("tot", "77", "a", "n", subset="swap_obj", benchmark=scpp),
        answer("validate", "s:1", "a", "accept", subset="swap_obj", benchmark=scpp),
    ]
    h = human_run(table(rows), n_boot=0, cache_dir=tmp_path / "c")
    assert [r["item_id"] for r in h.run.items.to_pylist()] == ["0"]
    assert h.skipped == 1 and h.unknown == 1 and h.left_out == {"validate": 1}
    assert [(g.subset, g.answers, g.right) for g in h.gold] == [("_gold", 2, 1)]
    recorded = h.run.record.recorded
    assert recorded is not None and recorded.unknown[0].item_id == "77"
    assert recorded.unknown[0].where == "row 5"
    with pytest.raises(DataError, match=r"row 5: an answer about item swap_obj/77"):
        human_run(table(rows), n_boot=0, strict_items=True, cache_dir=tmp_path / "c")


def test_bad_answer_tables_are_refused(scpp: str, tmp_path: Path) -> None:
    one = answer("tot", "0", "a", "n", subset="swap_obj", benchmark=scpp)
    with pytest.raises(DataError, match="row 2: annotator a answered tot item swap_obj/0 twice"):
        human_run(table([one, one]), n_boot=0)
    with pytest.raises(DataError, match="several studies"):
        human_run(table([one, {**one, "study": "other"}]), n_boot=0)
    with pytest.raises(DataError, match="no answer of a kind a run holds"):
        human_run(table([{**one, "practice": True}]), n_boot=0)
    bad = answer("bivlc_i2t", "3", "a", "caption0", correct=True)
    with pytest.raises(DataError, match=r"row 1: a bivlc_i2t item id is ITEM#image0 or"):
        human_run(table([bad]), n_boot=0)
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(DataError, match=r"x\.parquet: not a Parquet answers table"):
        human_run(tmp_path / "x.parquet")
    with pytest.raises(DataError, match="no such answers file"):
        human_run(tmp_path / "missing.parquet")


def _bivlc_votes(per_query: dict[str, list[tuple[int, int]]]) -> dict[str, np.ndarray]:
    """The `votes` columns of instances from (right, answers) per query (NaN: not asked)."""
    out = {}
    for q, cells in per_query.items():
        out[f"right_{q}"] = np.array([np.nan if n == 0 else r for r, n in cells])
        out[f"wrong_{q}"] = np.array([np.nan if n == 0 else n - r for r, n in cells])
    return out


def test_bivlc_queries_are_scored_by_the_quad_task() -> None:
    """App. D by hand, through `lexsem.tasks.quad`: I2T needs both image queries (Ipos2T,
    Ineg2T), T2I both caption queries, Group all four; a tie in one makes the metric a tie."""
    bivlc = voted_task(get_task("bivlc"))
    assert bivlc.name == "bivlc" and bivlc.metrics == get_task("bivlc").metrics
    #            instance 0: all right; 1: images right, captions wrong (no score matrix gives
    #            this); 2: Ineg2T an even split of two annotators; 3: only the images asked
    cols = _bivlc_votes({
        "ipos2t": [(1, 1), (1, 1), (1, 1), (1, 1)],
        "ineg2t": [(1, 1), (1, 1), (1, 2), (0, 1)],
        "tpos2i": [(1, 1), (0, 1), (1, 1), (0, 0)],
        "tneg2i": [(1, 1), (0, 1), (1, 1), (0, 0)],
    })  # fmt: skip
    strict = bivlc.compute(cols, "strict")
    got = {m: strict[m].hits[:3].tolist() for m in ("i2t", "t2i", "group")}
    assert got == {"i2t": [True, True, False], "t2i": [True, False, True],
                   "group": [True, False, False]}  # fmt: skip
    assert strict["group"].ties[:3].tolist() == [False, False, True]
    lenient = bivlc.compute(cols, "lenient")
    assert lenient["i2t"].hits[2] and lenient["group"].hits[2]
    assert strict["i2t"].hits[3] is np.False_  # instance 3: Ineg2T wrong
    # a metric is scored where every query it needs was asked: instance 3 has I2T only
    assert bivlc.metric_columns["i2t"] == ("right_ipos2t", "wrong_ipos2t", "right_ineg2t",
                                           "wrong_ineg2t")  # fmt: skip
    assert len(bivlc.metric_columns["group"]) == 8
    # Winoground's names for the same metrics: text = I2T, image = T2I
    wino = voted_task(get_task("winoground")).compute(cols, "strict")
    assert wino["text"].hits[:3].tolist() == got["i2t"]
    assert wino["image"].hits[:3].tolist() == got["t2i"]


def test_votes_agree_with_the_scores_a_model_would_give() -> None:
    """Every 2×2 score matrix over {0, 1, 2}: its four comparisons as one annotator's answers
    (a tie as an even split of two) give the model's seven BiVLC hits and ties."""
    from itertools import product

    from lexsem.tasks.quad import quad_hits

    m = np.array(list(product(range(3), repeat=4)), dtype=float)
    s00, s01, s10, s11 = m.T
    pairs = {"ipos2t": (s00, s01), "ineg2t": (s11, s10), "tpos2i": (s00, s10),
             "tneg2i": (s11, s01)}  # fmt: skip
    cols = {}
    for q, (a, b) in pairs.items():
        cols[f"right_{q}"] = np.where(a > b, 1.0, np.where(a == b, 1.0, 0.0))
        cols[f"wrong_{q}"] = np.where(a > b, 0.0, 1.0)
    for policy in ("strict", "lenient"):
        model = quad_hits(s00, s01, s10, s11, policy)
        people = voted_task(get_task("bivlc")).compute(cols, policy)
        for metric, h in model.items():
            assert people[metric].hits.tolist() == h.hits.tolist(), (policy, metric)
            assert people[metric].ties.tolist() == h.ties.tolist(), (policy, metric)


def _bivlc_study(sel: str, n: int, i2t_wrong: range, t2i_wrong: range) -> list[dict]:
    """BiVLC §4: groups of 25 instances per annotator, each instance's four queries answered
    by its annotator; wrong answers where the ranges say."""
    rows = []
    subsets = [f"{t}_{s}" for _, _, t, s in BIVLC_ROWS]
    for k in range(n):
        who = f"ann{k // 25}"
        sub = subsets[k % len(subsets)]
        for q in ("image0", "image1"):
            wrong = k in i2t_wrong and q == ("image0" if k % 2 else "image1")
            right = f"caption{q[-1]}"
            pick = f"caption{1 - int(q[-1])}" if wrong else right
            rows.append(answer("bivlc_i2t", f"{k}#{q}", who, pick, subset=sub, benchmark=sel))
        for q in ("caption0", "caption1"):
            wrong = k in t2i_wrong and q == ("caption1" if k % 3 else "caption0")
            right = f"image{q[-1]}"
            pick = f"image{1 - int(q[-1])}" if wrong else right
            rows.append(answer("bivlc_t2i", f"{k}#{q}", who, pick, subset=sub, benchmark=sel))
    return rows


def test_bivlc_human_baseline_table_2(tmp_path: Path) -> None:
    """500 instances, 20 annotators × 25, 2,000 queries. An instance with a wrong image query
    fails I2T, with a wrong caption query T2I, with either Group: 48 I2T failures, 35 T2I
    failures, 17 of them the same instances give Table 2's 90.40 / 93.00 / 86.80."""
    n = 500
    cols = bivlc_columns([BIVLC_ROWS[k % len(BIVLC_ROWS)] for k in range(n)])
    path = tmp_path / "bivlc500.parquet"
    write_parquet(path, cols, row_group_size=100)
    sel = f"bivlc:{path}"
    rows = _bivlc_study(sel, n, range(0, 48), range(31, 66))
    assert len(rows) == 2000
    run = human_run(table(rows), n_boot=0, cache_dir=tmp_path / "c").run
    acc = {m: run.record.result("bivlc:bivlc500", m, MICRO).accuracy
           for m in ("i2t", "t2i", "group")}  # fmt: skip
    assert acc == pytest.approx({"i2t": 90.40, "t2i": 93.00, "group": 86.80})
    assert run.record.config.tasks == ["bivlc"]
    # the per-query metrics: one image query wrong on each of the 48 instances
    ipos = run.record.result("bivlc:bivlc500", "ipos2t", MICRO).hits
    ineg = run.record.result("bivlc:bivlc500", "ineg2t", MICRO).hits
    assert (n - ipos) + (n - ineg) == 48


def _model_run(sel: str, tmp_path: Path) -> Path:
    out = tmp_path / "bow"
    cfg = EvalConfig(benchmarks=(sel,), tasks=("tot",), n_boot=0, cache_dir=tmp_path / "c")
    Evaluator(cfg).run(BagOfWordsEncoder(), out=out)
    return out


def test_report_and_compare_show_the_human_row(scpp: str, tmp_path: Path) -> None:
    rows = [answer("tot", str(i), "a", "n" if i else "p2", subset="swap_obj", benchmark=scpp)
            for i in range(3)]  # fmt: skip
    rows += [answer("tot", str(i), "b", "n", subset="replace_att", benchmark=scpp)
             for i in range(2)]  # fmt: skip
    human = tmp_path / "human"
    human_run(table(rows), out=human, n_boot=20, cache_dir=tmp_path / "c")
    bow = _model_run(scpp, tmp_path)
    runner = CliRunner()
    res = runner.invoke(app, ["report", str(human), str(bow)])
    assert res.exit_code == 0, res.output
    assert "| human | 100.00 (n=2) | 66.67 (n=3) |" in res.output  # n beside each number
    model = Run.load(bow)
    mh = {(r["subset"], r["item_id"]): r["hit"] for r in model.items.to_pylist()
          if r["metric"] == "tot"}  # fmt: skip
    hh = {(r["subset"], r["item_id"]): r["hit"] for r in Run.load(human).items.to_pylist()}
    b = sum(hh[k] and not mh[k] for k in hh)
    c = sum(mh[k] and not hh[k] for k in hh)
    # the model on the human items only: 5 of them, whatever the benchmark holds besides
    on_human = 100 * sum(mh[k] for k in hh) / len(hh)
    assert "### human and the models on the same items — scpp:triplets TOT" in res.output
    assert f"| bow | micro | 5 | {on_human:.2f} |" in res.output
    assert f"| {b} | {c} |" in res.output
    html = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(human), str(bow), "--html", str(html)])
    assert res.exit_code == 0, res.output
    page = html.read_text(encoding="utf-8")
    assert ">human<" in page and "human and the models on the same items" in page
    res = runner.invoke(app, ["compare", str(human), str(bow)])
    assert res.exit_code == 0, res.output
    assert f"| {b} | {c} |" in res.output and "A = human" in res.output
    lo, hi = wilson_interval(4, 5)  # 4 of the 5 answered items right
    want = f"A (human) on scpp:triplets tot: 80.00 of n = 5, 95% Wilson interval [{lo:.1f}, "
    assert want + f"{hi:.1f}]" in res.output


def test_a_few_items_all_right_get_a_wilson_interval_not_a_point(scpp: str, tmp_path: Path) -> None:
    """4 of 4 right: the bootstrap's every resample is all right ([100, 100]); the human run
    records the Wilson score interval, worked out by hand (Wilson 1927, z = 1.96), and the
    table shows it with n."""
    rows = [answer("tot", str(i), "a", "n", subset="swap_obj", benchmark=scpp) for i in range(2)]
    rows += [answer("tot", str(i), "a", "n", subset="replace_att", benchmark=scpp)
             for i in range(2)]  # fmt: skip
    human = tmp_path / "human"
    run = human_run(table(rows), out=human, n_boot=200, cache_dir=tmp_path / "c").run
    z2 = 1.959963984540054**2
    low = 100 * (1 + z2 / 8 - 1.959963984540054 * (z2 / 64) ** 0.5) / (1 + z2 / 4)  # p = 1
    row = run.record.result("scpp:triplets", "tot", MICRO)
    assert (row.n, row.accuracy) == (4, 100.0)
    assert (row.ci_low, row.ci_high) == pytest.approx((low, 100.0))
    assert low == pytest.approx(51.01, abs=0.01)
    macro = run.record.result("scpp:triplets", "tot", MACRO)
    assert (macro.ci_low, macro.ci_high) == (None, None)  # a mean of proportions: none
    res = CliRunner().invoke(app, ["report", str(human), "--ci"])
    assert res.exit_code == 0, res.output
    assert f"| 100.00 (4/5) [{low:.1f}, 100.0] |" in res.output  # micro: 4 of the 5 items


def test_compare_pairs_the_items_the_humans_answered(scpp: str, tmp_path: Path) -> None:
    """A study answers a sample: McNemar over those items; the model must cover them."""
    from lexsem.analysis.run_comparison import mcnemar

    rows = [answer("tot", "0", "a", "n", subset="swap_obj", benchmark=scpp),
            answer("tot", "1", "a", "p1", subset="swap_obj", benchmark=scpp)]  # fmt: skip
    human = human_run(table(rows), n_boot=0, cache_dir=tmp_path / "c").run
    model = Run.load(_model_run(scpp, tmp_path))
    res = mcnemar(human, model, "scpp:triplets")
    assert res.n == 2 and res.accuracy_a == 50.0
    assert mcnemar(model, human, "scpp:triplets").n == 2
    import pyarrow.compute as pc

    lacks = pc.invert(pc.and_(pc.equal(model.items["subset"], "swap_obj"),
                              pc.equal(model.items["item_id"], "0")))  # fmt: skip
    short = Run(model.record, model.items.filter(lacks))  # the model lacks swap_obj/0
    with pytest.raises(LexsemError, match="does not cover 1 of the 2 items"):
        mcnemar(human, short, "scpp:triplets")


def test_compare_treats_a_human_run_as_a_model_run(scpp: str, tmp_path: Path) -> None:
    """A study answering every item of the benchmark: its run folder is the Evaluator's (the
    same item-table columns as a model's, bootstrap CIs), and `compare` (McNemar) reads the
    human run against a model exactly as it reads two model runs."""
    from lexsem.analysis.run_comparison import mcnemar

    rows = [answer("tot", str(i), "a", "p1" if (sub, i) == ("swap_obj", 1) else "n",
                   subset=sub, benchmark=scpp)
            for sub, items in TRIPLETS.items() for i in range(len(items))]  # fmt: skip
    human = tmp_path / "human"
    human_run(table(rows), out=human, n_boot=50, cache_dir=tmp_path / "c")
    bow = _model_run(scpp, tmp_path)
    other = tmp_path / "other"
    cfg = EvalConfig(benchmarks=(scpp,), tasks=("tot",), n_boot=0, cache_dir=tmp_path / "c")
    Evaluator(cfg).run(BagOfWordsEncoder(dim=16, name="bow16"), out=other)
    h, m, o = Run.load(human), Run.load(bow), Run.load(other)
    core = ["benchmark", "subset", "item_id", "task", "metric", "hit", "tie"]
    assert h.items.select(core).schema == m.items.select(core).schema
    row = h.record.result("scpp:triplets", "tot", MICRO)
    assert row.accuracy == pytest.approx(100 * 4 / 5) and row.ci_low is not None
    runner = CliRunner()
    for a, b, run_a, run_b in ((human, bow, h, m), (other, bow, o, m)):
        res = runner.invoke(app, ["compare", str(a), str(b)])
        assert res.exit_code == 0, res.output
        ha = {(r["subset"], r["item_id"]): r["hit"] for r in run_a.items.to_pylist()}
        hb = {(r["subset"], r["item_id"]): r["hit"] for r in run_b.items.to_pylist()}
        only_a = sum(ha[k] and not hb[k] for k in ha)
        only_b = sum(hb[k] and not ha[k] for k in ha)
        r = mcnemar(run_a, run_b, "scpp:triplets")
        assert (r.n, r.b, r.c) == (5, only_a, only_b)  # every item paired, none left out
        assert f"| scpp:triplets | tot | 5 | {r.accuracy_a:.2f} |" in res.output


def test_a_run_json_alone_beside_a_human_run_still_gives_the_tables(
    scpp: str, tmp_path: Path
) -> None:
    """The tables need run.json only: a model run without its per-item file is warned about
    and left out of the same-items table, whose other rows stay."""
    rows = [answer("tot", str(i), "a", "n", subset="swap_obj", benchmark=scpp) for i in range(3)]
    human = tmp_path / "human"
    human_run(table(rows), out=human, n_boot=0, cache_dir=tmp_path / "c")
    bow = _model_run(scpp, tmp_path)
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "run.json").write_bytes((bow / "run.json").read_bytes())
    res = CliRunner().invoke(app, ["report", str(human), str(alone), str(bow)])
    assert res.exit_code == 0, res.output
    assert "no per-item file" in res.output and "| human | " in res.output
    assert "| bow | swap_obj | 3 |" in res.output  # the model with its items, paired

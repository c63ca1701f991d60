"""The per-caption yes/no task of SugarCrepe++ (App. G.1, Table 17): hits decided by hand.

A pair score is read as P(yes) / (P(yes) + P(no)): yes above 0.5, no below it, 0.5 a tie; an
item is a hit when the answers are yes to P1, yes to P2 and no to N.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from builders.fakes import (
    TRIPLETS,
    BagOfWordsEncoder,
    TinyDualEncoder,
    scpp_user_files,
    tiny_preprocess,
)
from lexsem import evaluate
from lexsem.benchmarks import catalog as registry
from lexsem.engine.runner import IMAGE, PAIR, TEXT
from lexsem.errors import LexsemError
from lexsem.evaluator import select_tasks
from lexsem.report.all_tables import build_tables
from lexsem.report.tables import to_markdown
from lexsem.stats.bootstrap import MICRO
from lexsem.tasks.catalog import get_task
from lexsem.tasks.triplet import S_I_N, S_I_P1, S_I_P2
from lexsem.tasks.yesno import YESNO, says_no, says_yes

pytestmark = pytest.mark.torch

NAN = float("nan")
METRICS = ("yesno", "yes_p1", "yes_p2", "no_n")


# -- the decision per caption ------------------------------------------------------------------
SCORES = [0.9, 0.5, 0.1, NAN, 0.5000001, 0.4999999, 0.0, 1.0]


def test_yes_is_above_half_no_below_half_and_half_is_a_tie() -> None:
    yes, no = says_yes(np.array(SCORES)), says_no(np.array(SCORES))
    assert yes.hits.tolist() == [True, False, False, False, True, False, False, True]
    assert no.hits.tolist() == [False, False, True, False, False, True, True, False]
    ties = [False, True, False, False, False, False, False, False]
    assert yes.ties.tolist() == ties and no.ties.tolist() == ties


def test_lenient_counts_half_as_either_answer_and_nan_as_neither() -> None:
    yes, no = says_yes(np.array(SCORES), "lenient"), says_no(np.array(SCORES), "lenient")
    assert yes.hits.tolist() == [True, True, False, False, True, False, False, True]
    assert no.hits.tolist() == [False, True, True, False, False, True, True, False]


# -- the item-level rule -----------------------------------------------------------------------
# (s(I, P1), s(I, P2), s(I, N)) per item, and what each item is
ITEMS = [
    (0.9, 0.8, 0.1),  # yes, yes, no: the hit
    (0.9, 0.8, 0.7),  # yes to everything (N included): a miss
    (0.4, 0.8, 0.1),  # no to P1
    (0.9, 0.2, 0.1),  # no to P2
    (0.5, 0.9, 0.1),  # P1 undecided: a tie
    (0.9, 0.9, 0.5),  # N undecided: a tie
    (NAN, 0.9, 0.1),  # P1 not scored: answers neither
    (0.2, 0.3, 0.9),  # every answer wrong
]
STRICT = {
    "yesno": [1, 0, 0, 0, 0, 0, 0, 0],
    "yes_p1": [1, 1, 0, 1, 0, 1, 0, 0],
    "yes_p2": [1, 1, 1, 0, 1, 1, 1, 0],
    "no_n": [1, 0, 1, 1, 1, 0, 1, 0],
}
LENIENT = {**STRICT, "yesno": [1, 0, 0, 0, 1, 1, 0, 0], "yes_p1": [1, 1, 0, 1, 1, 1, 0, 0]}
LENIENT["no_n"] = [1, 0, 1, 1, 1, 1, 1, 0]
TIES = {
    "yesno": [0, 0, 0, 0, 1, 1, 0, 0],
    "yes_p1": [0, 0, 0, 0, 1, 0, 0, 0],
    "yes_p2": [0] * 8,
    "no_n": [0, 0, 0, 0, 0, 1, 0, 0],
}


def _columns(rows: Sequence[tuple[float, float, float]]) -> dict[str, np.ndarray]:
    a = np.array(rows, dtype=float)
    return {S_I_P1: a[:, 0], S_I_P2: a[:, 1], S_I_N: a[:, 2]}


@pytest.mark.parametrize("policy,expected", [("strict", STRICT), ("lenient", LENIENT)])
def test_item_hit_is_yes_to_p1_and_p2_and_no_to_n(
    policy: str, expected: dict[str, list[int]]
) -> None:
    out = YESNO.compute(_columns(ITEMS), policy)  # type: ignore[arg-type]
    assert tuple(out) == METRICS
    for metric in METRICS:
        assert out[metric].hits.astype(int).tolist() == expected[metric], metric
        assert out[metric].ties.astype(int).tolist() == TIES[metric], metric
    assert 100.0 * out["yesno"].hits.mean() == (12.5 if policy == "strict" else 37.5)


def test_scores_that_are_not_probabilities_are_refused() -> None:
    with pytest.raises(LexsemError, match=r"not probabilities.*score=vqa_norm"):
        YESNO.compute(_columns([(0.9, 0.8, -0.2)]), "strict")
    with pytest.raises(LexsemError, match=r"s_i_p2"):
        YESNO.compute(_columns([(0.9, 3.5, 0.2)]), "strict")
    YESNO.compute(_columns([(NAN, 1.0, 0.0)]), "strict")  # NaN and the bounds are fine


# -- registration and selection ----------------------------------------------------------------
def test_registered_and_opt_in_on_sugarcrepe_pp() -> None:
    assert get_task("yesno") is YESNO
    assert YESNO.metrics[0] == "yesno" and YESNO.probability_scores
    spec = registry.get("sugarcrepe_pp")
    assert spec.opt_in_tasks == ("yesno",) and "yesno" in spec.tasks
    assert "yesno" not in spec.image_tasks + spec.text_tasks
    bench = SimpleNamespace(spec=spec)
    # not in a default run (an encoder's or a pair scorer's); chosen when named
    assert select_tasks(bench, None, {TEXT, IMAGE}) == ["tot", "itt"]  # type: ignore[arg-type]
    assert select_tasks(bench, None, {PAIR}) == ["itt"]  # type: ignore[arg-type]
    assert select_tasks(bench, ["yesno"], {PAIR}) == ["yesno"]  # type: ignore[arg-type]
    assert select_tasks(bench, ["itt", "yesno"], {PAIR}) == ["itt", "yesno"]  # type: ignore[arg-type]


@pytest.mark.parametrize("caps", [{TEXT}, {TEXT, IMAGE}])
def test_a_model_that_is_no_pair_scorer_cannot_select_it(caps: set[str]) -> None:
    bench = SimpleNamespace(spec=registry.get("sugarcrepe_pp"))
    with pytest.raises(LexsemError, match=r"cannot run task 'yesno'.*score=vqa_norm"):
        select_tasks(bench, ["yesno"], caps)  # type: ignore[arg-type]


def test_other_benchmarks_do_not_offer_it() -> None:
    bench = SimpleNamespace(spec=registry.get("sugarcrepe"))
    with pytest.raises(LexsemError, match=r"does not support task 'yesno'"):
        select_tasks(bench, ["yesno"], {PAIR})  # type: ignore[arg-type]


# -- end to end --------------------------------------------------------------------------------
# P(yes) / (P(yes) + P(no)) per caption of fakes.TRIPLETS, whatever the image
TABLE = {
    # swap_obj 0: yes, yes, no -> hit
    "A cat chases a dog.": 0.9,
    "A dog is chased by a cat.": 0.7,
    "A dog chases a cat.": 0.2,
    # swap_obj 1: yes to N -> miss
    "A man rides a horse.": 0.8,
    "A horse carries a man.": 0.6,
    "A horse rides a man.": 0.6,
    # swap_obj 2: P1 at 0.5 -> a tie, a miss under strict
    "A red ball and a blue box.": 0.5,
    "A blue box and a red ball.": 0.9,
    "A blue ball and a red box.": 0.1,
    # replace_att 0: no to P2 -> miss
    "A small dog sleeps.": 0.9,
    "A tiny dog is sleeping.": 0.3,
    "A large dog sleeps.": 0.1,
    # replace_att 1: hit
    "Green apples on a table.": 0.95,
    "On a table lie green apples.": 0.85,
    "Red apples on a table.": 0.05,
}


class TablePairScorer:
    """A pair scorer reading each caption's score from `TABLE` (P(yes)-normalised scores)."""

    name = "table"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-table", "scores": sorted(TABLE.items())}

    def preprocess(self, image: Any) -> Any:
        return tiny_preprocess(image)

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        return np.array([TABLE[t] for t in texts])


@pytest.fixture
def scpp_files(tmp_path: Path) -> tuple[str, Path]:
    return scpp_user_files(tmp_path)


def _run(sel: str, images: Path, **settings: Any) -> Any:
    return evaluate(
        TablePairScorer(), [sel], coco_val2017=images, n_boot=0, num_workers=0, **settings
    )


def test_end_to_end_per_item_table_and_accuracy(scpp_files: tuple[str, Path]) -> None:
    sel, images = scpp_files
    run = _run(sel, images, tasks=["yesno"])
    assert run.record.config.tasks == ["yesno"]
    bench = run.record.benchmarks[0].name
    acc = {(r.metric, r.subset): r for r in run.record.results}
    expected = {
        ("yesno", "swap_obj"): (100 / 3, 1),
        ("yes_p1", "swap_obj"): (200 / 3, 1),
        ("yes_p2", "swap_obj"): (100.0, 0),
        ("no_n", "swap_obj"): (200 / 3, 0),
        ("yesno", "replace_att"): (50.0, 0),
        ("yes_p1", "replace_att"): (100.0, 0),
        ("yes_p2", "replace_att"): (50.0, 0),
        ("no_n", "replace_att"): (100.0, 0),
    }
    for key, (value, ties) in expected.items():
        assert acc[key].accuracy == pytest.approx(value), key
        assert acc[key].ties == ties, key
    assert acc[("yesno", MICRO)].accuracy == pytest.approx(40.0)  # 2 hits of 5 items
    rows = [r for r in run.items.to_pylist() if r["metric"] == "yesno"]
    by_id = {(r["subset"], r["item_id"]): r for r in rows}
    assert {k: r["hit"] for k, r in by_id.items()} == {
        ("swap_obj", "0"): True,
        ("swap_obj", "1"): False,
        ("swap_obj", "2"): False,
        ("replace_att", "0"): False,
        ("replace_att", "1"): True,
    }
    assert by_id[("swap_obj", "2")]["tie"] and not by_id[("swap_obj", "1")]["tie"]
    for (sub, item_id), r in by_id.items():
        p1, p2, n = TRIPLETS[sub][int(item_id)]
        assert (r[S_I_P1], r[S_I_P2], r[S_I_N]) == pytest.approx((TABLE[p1], TABLE[p2], TABLE[n]))
        assert r["benchmark"] == bench and r["task"] == "yesno"
    assert run.items.num_rows == 5 * len(METRICS)
    assert "Yes/No" in to_markdown(build_tables([run.record]))


def test_not_run_by_default(scpp_files: tuple[str, Path]) -> None:
    sel, images = scpp_files
    run = _run(sel, images)
    assert run.record.config.tasks == ["itt"]
    assert not {r.metric for r in run.record.results} & set(METRICS)


def test_an_item_whose_image_is_skipped_is_left_out_as_in_itt(
    scpp_files: tuple[str, Path],
) -> None:
    sel, images = scpp_files
    (images / "0.jpg").unlink()  # swap_obj 0 (a hit) and replace_att 0 (a miss) lose it
    run = _run(sel, images, tasks=["itt", "yesno"], skip_bad_images=True)
    assert run.record.benchmarks[0].skipped == {"swap_obj": ["0"], "replace_att": ["0"]}
    res = {(r.task, r.metric, r.subset): r for r in run.record.results}
    for task in ("itt", "yesno"):
        assert res[(task, task, "swap_obj")].n == 2 and res[(task, task, "replace_att")].n == 1
    assert res[("yesno", "yesno", "swap_obj")].accuracy == 0.0
    assert res[("yesno", "yesno", "replace_att")].accuracy == 100.0


@pytest.mark.parametrize("model", [BagOfWordsEncoder, TinyDualEncoder])
def test_refused_before_any_model_work(model: type, scpp_files: tuple[str, Path]) -> None:
    sel, images = scpp_files
    enc = model()
    with pytest.raises(LexsemError, match=r"needs a pair\s+scorer"):
        evaluate(enc, [sel], tasks=["yesno"], coco_val2017=images, n_boot=0, num_workers=0)
    assert enc.calls == 0 and getattr(enc, "image_calls", 0) == 0

"""Prompted multiple choice as a task of a run (`lexsem.tasks.choice_task`): a generative model
answers the papers' prompts about each item's image in every ordering, through the engine
(request store, image decoding) into a run folder like any other run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders.fakes import TRIPLETS, ScriptedChat, scpp_user_files
from lexsem import evaluate
from lexsem.errors import LexsemError
from lexsem.stats.bootstrap import MICRO
from lexsem.tasks.choice import PROMPTS
from lexsem.tasks.choice_task import CODES, choice_task, expected_option

pytestmark = pytest.mark.torch

MARKER = re.compile(r"\(\d\)")
NEGATIVES = {n for rows in TRIPLETS.values() for _, _, n in rows}


class ScriptedReplies(ScriptedChat):
    """A chat model answering from `reply(prompt)`; `tag` tells its answers apart."""

    def __init__(self, reply: Any, tag: str = "") -> None:
        super().__init__(reply, "scripted", tag=tag)


def oracle(prompt: str) -> str:
    """Names the option that is a negative caption (the right answer of the SugarCrepe++
    prompts), found by where the negative stands among the prompt's option markers."""
    for neg in NEGATIVES:
        at = prompt.find(neg)
        if at >= 0:
            return f"({len(MARKER.findall(prompt[:at]))})"
    raise AssertionError(f"no negative in {prompt!r}")


@pytest.fixture
def scpp(tmp_path: Path) -> tuple[str, Path]:
    return scpp_user_files(tmp_path)


def _run(model: Any, scpp: tuple[str, Path], tmp_path: Path, **kw: Any) -> Any:
    sel, images = scpp
    return evaluate(model, [sel], coco_val2017=images, n_boot=0, num_workers=0,
                    cache_dir=tmp_path / "cache", **kw)  # fmt: skip


def test_the_right_option_follows_the_ordering_and_the_prompt_target() -> None:
    assert [expected_option(PROMPTS["scpp1"], o) for o in ("NPP", "PNP", "PPN")] == [1, 2, 3]
    sc = PROMPTS["sc_gpt4v"]  # which caption *best* describes the image: the positive
    assert [expected_option(sc, o) for o in ("pos_first", "neg_first")] == [1, 2]


def test_an_oracle_scores_100_under_every_ordering_and_circular(scpp: Any, tmp_path: Path) -> None:
    run = _run(ScriptedReplies(oracle), scpp, tmp_path)
    acc = {(r.metric, r.subset): r.accuracy for r in run.record.results}
    assert run.record.config.tasks == ["choice_scpp1"]  # the main prompt by default
    for metric in ("NPP", "PNP", "PPN", "circular"):
        assert acc[(metric, MICRO)] == 100.0, metric


def test_a_constant_first_option_shows_its_position_bias(scpp: Any, tmp_path: Path) -> None:
    model = ScriptedReplies(lambda p: "(1)", tag="one")
    run = _run(model, scpp, tmp_path, tasks=["choice_scpp2"])
    acc = {r.metric: r.accuracy for r in run.record.results if r.subset == MICRO}
    assert acc == {"NPP": 100.0, "PNP": 0.0, "PPN": 0.0, "circular": 0.0}
    rows = run.items.to_pylist()
    assert {r["answer_NPP"] for r in rows} == {1.0} and {r["text_answer_PPN"] for r in rows} == {
        "(1)"
    }
    assert model.asked == 5 * 3  # every item in every ordering, once


def test_answers_that_name_no_option_are_misses_with_their_kind(scpp: Any, tmp_path: Path) -> None:
    replies = iter(["None of them.", "(1) and (2)", "I cannot help with that."] * 10)
    run = _run(ScriptedReplies(lambda p: next(replies), tag="odd"), scpp, tmp_path)
    rows = [r for r in run.items.to_pylist() if r["metric"] == "circular"]
    seen = {r[f"answer_{o}"] for r in rows for o in ("NPP", "PNP", "PPN")}
    assert seen == {CODES["none"], CODES["multiple"], CODES["refusal"]}
    assert not any(r["hit"] for r in rows)


def test_a_rerun_asks_nothing_and_gives_the_same_run(scpp: Any, tmp_path: Path) -> None:
    first = ScriptedReplies(oracle)
    a = _run(first, scpp, tmp_path)
    again = ScriptedReplies(lambda p: "(3)")  # same fingerprint: answers come from the store
    b = _run(again, scpp, tmp_path)
    assert first.asked == 15 and again.asked == 0
    assert a.items.equals(b.items)


def test_compute_reads_codes_per_ordering() -> None:
    task = choice_task("scpp_order")
    cols = {"answer_NPP": np.array([1.0, 2.0, 0.0]), "answer_PNP": np.array([2.0, 2.0, -3.0]),
            "answer_PPN": np.array([3.0, 1.0, 3.0])}  # fmt: skip
    hits = task.compute(cols, "strict")
    assert hits["NPP"].hits.tolist() == [True, False, False]
    assert hits["circular"].hits.tolist() == [True, False, False]


def test_tasks_the_model_cannot_run_are_refused_before_any_work(scpp: Any, tmp_path: Path) -> None:
    model = ScriptedReplies(oracle)
    with pytest.raises(LexsemError, match="choice_sc_gpt4v"):
        _run(model, scpp, tmp_path, tasks=["choice_sc_gpt4v"])  # a pair prompt on triplets
    with pytest.raises(LexsemError, match="not itt"):
        _run(model, scpp, tmp_path, tasks=["itt"])
    assert model.asked == 0

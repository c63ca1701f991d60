"""How each multiple-choice preset's answers are scored (`lexsem.tasks.answer_rules`): the
authors' rule of SugarCrepe's GPT-4V evaluation on answers of the kinds GPT-4V gave, with the
authors' verdict written by hand; the presets' rules; both rules in a run (score-answers and a
live chat model), with the answers on which they disagree."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.fakes import ScriptedChat
from builders.pair_answers import (
    ANSWERS,
    AUTHORS,
    DISAGREE,
    PAIRS,
    STRICT_HITS,
    pair_files,
    write_pair_answers,
)
from lexsem import evaluate
from lexsem.cli import app
from lexsem.results.run import Run
from lexsem.tasks.answer_rules import STRICT, marker_rule, read_answer
from lexsem.tasks.answers import parse_answer
from lexsem.tasks.choice import PROMPTS, Answer, score_choices
from lexsem.tasks.choice_task import choice_task

runner = CliRunner()
GPT4V = PROMPTS["sc_gpt4v"].rule
OPTIONS = ["A dog sleeps on a bed.", "A bed sleeps on a dog."]

# (answer, the option SugarCrepe's count reads it as: 1, 2 or None for no single option);
# an answer is a hit when that option is the right one
AUTHORS_VERDICT: list[tuple[str | None, int | None]] = [
    ("(1)", 1),
    ("(2)", 2),
    ("Output (1).", 1),
    ("Output (2)", 2),
    ("**(2)**", 2),
    ("The correct caption is:\n(2) A bed sleeps on a dog.", 2),
    # a refusal first, then a marker: the marker counts
    ("Neither caption accurately describes the image. However, if I must choose, (2).", 2),
    (
        "Neither caption accurately describes the image. Therefore, I cannot output either (1) or "
        "(2) as they both are incorrect.",
        None,
    ),
    ("Neither (1) nor (2)", None),
    ("(1) and (2)", None),
    ("(2), not (1)", None),
    ("(2) ... as (2) says", 2),  # one distinct marker, said twice
    ("1", None),  # a bare number is no marker
    ("2", None),
    ("2.", None),
    ("Caption 2", None),
    ("( 2 )", None),
    ("(3)", None),  # a third option does not exist
    ("Neither", None),
    ("I'm sorry, I can't assist with that request.", None),
    ("", None),
    (None, None),
    # a marker inside a quoted caption counts like any other
    ('Output (1): "A dog (2) sleeps on a bed."', None),
    ('"Two dogs (2)" is wrong; the answer is (1)', None),
]


@pytest.mark.parametrize(("answer", "option"), AUTHORS_VERDICT)
def test_the_gpt4v_rule_reads_answers_as_sugarcrepe_counted_them(
    answer: str | None, option: int | None
) -> None:
    parsed = read_answer(GPT4V, answer, OPTIONS)
    assert parsed.option == option
    assert (parsed.kind == "option") == (option is not None)


def test_the_rules_disagree_where_the_strict_parser_reads_more() -> None:
    """The strict parser reads a bare `2` and stops at `Neither ...`: the authors did not."""
    assert (
        parse_answer("2", OPTIONS).option == 2 and read_answer(GPT4V, "2", OPTIONS).option is None
    )
    neither = "Neither caption accurately describes the image. If I must choose, (2)."
    assert parse_answer(neither, OPTIONS).kind == "none"
    assert read_answer(GPT4V, neither, OPTIONS).option == 2
    assert read_answer(STRICT, neither, OPTIONS) == parse_answer(neither, OPTIONS)


def test_each_preset_carries_its_authors_rule() -> None:
    assert GPT4V.kind == "markers" and GPT4V.markers == ("(1)", "(2)")
    assert "SugarCrepe, GPT-4V evaluation (gpt-4v-results readme)" in GPT4V.source
    for name in ("scpp1", "scpp2", "scpp3", "scpp_order"):  # the scpp repo says nothing
        assert PROMPTS[name].rule == STRICT
        assert PROMPTS[name].reading("authors") == STRICT
        assert choice_task(name).other_reading is None  # one rule: nothing to compare
    assert PROMPTS["sc_gpt4v"].reading("strict") == STRICT
    assert choice_task("sc_gpt4v").other_reading is not None
    with pytest.raises(ValueError, match="markers"):
        marker_rule(("(1)", "(1)"), "twice")


def test_score_choices_reads_by_the_rule_chosen() -> None:
    from lexsem.benchmarks.items import PairItem

    items = {"s/0": PairItem("0", "s", "0.jpg", *OPTIONS)}
    answers = [Answer("0", "s", "sc_gpt4v", "pos_first", "1"),
               Answer("0", "s", "sc_gpt4v", "neg_first", "(2)")]  # fmt: skip
    authors = score_choices(answers, items)
    strict = score_choices(answers, items, answer_rule="strict")
    assert authors.accuracy[("sc_gpt4v", "pos_first")] == 0.0
    assert strict.accuracy[("sc_gpt4v", "pos_first")] == 100.0
    assert authors.rule == {"sc_gpt4v": "authors"} and strict.rule == {"sc_gpt4v": "strict"}


# -- both rules in a run ------------------------------------------------------------------------


def _hits(run: Run, rule: str) -> dict[str, int]:
    rows = [r for r in run.record.answer_rules if r.subset == "swap_obj"]
    if rule == run.record.config.answer_rule:
        return {r.metric: r.hits for r in rows}
    return {r.metric: r.other_hits for r in rows}


@pytest.mark.parametrize("rule", ["authors", "strict"])
def test_a_run_records_both_rules_and_the_answers_they_disagree_on(
    tmp_path: Path, rule: str
) -> None:
    sel, _ = pair_files(tmp_path)
    answers = write_pair_answers(tmp_path / "a.jsonl")
    res = runner.invoke(app, ["score-answers", str(answers), "-b", sel, "--answer-rule", rule,
                              "--run", str(tmp_path / "run"), "--cache-dir",
                              str(tmp_path / "c")])  # fmt: skip
    assert res.exit_code == 0, res.output
    run = Run.load(tmp_path / "run")
    assert run.record.config.answer_rule == rule
    hits = {r.metric: r.hits for r in run.record.results if r.subset == "swap_obj"}
    assert hits == (AUTHORS if rule == "authors" else STRICT_HITS)
    assert _hits(run, "authors") == AUTHORS and _hits(run, "strict") == STRICT_HITS
    assert {r.metric: r.disagree for r in run.record.answer_rules} == DISAGREE
    other = "strict" if rule == "authors" else "authors"
    assert {r.other_rule for r in run.record.answer_rules} == {other}
    # the table says both: pos_first 25.00 (authors) and 50.00 (strict), 1 answer apart
    acc = {"authors": "25.00", "strict": "50.00"}
    assert f"| sc_gpt4v | pos_first | {rule} | {acc[rule]} | {other} | {acc[other]} | 1 |" in (
        res.output
    )


def test_the_rule_is_part_of_the_run_id(tmp_path: Path) -> None:
    from lexsem.ask import score_answers

    sel, _ = pair_files(tmp_path)
    answers = write_pair_answers(tmp_path / "a.jsonl")
    runs = {r: score_answers(answers, sel, answer_rule=r, cache_dir=tmp_path / "c", n_boot=0)
            for r in ("authors", "strict")}  # fmt: skip
    assert runs["authors"].record.run_id != runs["strict"].record.run_id
    again = score_answers(answers, sel, cache_dir=tmp_path / "c", n_boot=0)
    assert again.record.run_id == runs["authors"].record.run_id  # authors: the default


@pytest.mark.torch
def test_a_live_chat_model_is_scored_by_the_same_rule(tmp_path: Path) -> None:
    """`eval --task choice_sc_gpt4v` with a chat model: its answers read as its published
    answers would be."""
    sel, images = pair_files(tmp_path, images=True)

    def reply(prompt: str) -> str:  # answers item 1 as GPT-4V's answers above
        i = next(i for i, (p, _) in enumerate(PAIRS) if p in prompt)
        ordering = (
            "pos_first" if prompt.index(PAIRS[i][0]) < prompt.index(PAIRS[i][1]) else ("neg_first")
        )
        return ANSWERS[(i, ordering)]

    kw = {"coco_val2017": images, "n_boot": 0, "num_workers": 0, "cache_dir": tmp_path / "c",
          "tasks": ["choice_sc_gpt4v"]}  # fmt: skip
    for rule, expected in (("authors", AUTHORS), ("strict", STRICT_HITS)):
        run = evaluate(ScriptedChat(reply), [sel], answer_rule=rule, **kw)
        hits = {r.metric: r.hits for r in run.record.results if r.subset == "swap_obj"}
        assert hits == expected, rule
        assert {r.metric: r.disagree for r in run.record.answer_rules} == DISAGREE

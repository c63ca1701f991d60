"""Prompted multiple choice: the papers' prompts verbatim, every ordering, and the scores of
hand-made answers (an oracle, a constant "(1)" model with its expected position bias, refusals)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lexsem.benchmarks.items import PairItem, TripletItem
from lexsem.tasks.choice import PROMPTS, Answer, options_of, orderings, render, score_choices

TRIPLETS = {
    f"s/{i}": TripletItem(
        str(i), "s", None, f"a dog {i} runs", f"{i} dog is running", f"a {i} runs dog"
    )
    for i in range(6)
}
PAIRS = {
    f"p/{i}": PairItem(str(i), "p", None, f"a red cube {i}", f"a cube red {i}") for i in range(4)
}


def test_prompts_are_the_papers_verbatim() -> None:
    item = TripletItem("0", "s", None, "P1", "P2", "N")
    assert render("scpp1", item, "NPP") == (
        "Do any of the following captions not match the image? (1) N; (2)P1; (3) P2; provide "
        "output as (1), (2), (3) or none"
    )
    assert render("scpp3", item, "NPP").endswith(
        "(1) N; (2) P1; (3) P2; provide output as (1), (2) or (3)"
    )
    assert render("scpp_order", item, "PPN") == (
        "Which one of the three captions does not match the image? (1) P1; (2) P2; (3) N; "
        "provide output as either (1), (2), or (3). Do not provide any explanation"
    )
    pair = PairItem("0", "p", None, "POS", "NEG")
    assert render("sc_gpt4v", pair, "neg_first") == (
        "Which caption best describes the image?\n(1) NEG\n (2) POS\nOutput (1) or (2)."
    )
    assert all(p.source for p in PROMPTS.values())


def test_orderings_put_the_negative_at_each_position() -> None:
    item = TripletItem("0", "s", None, "P1", "P2", "N")
    assert [options_of(item, o)[1] for o in orderings(3)] == [1, 2, 3]
    assert options_of(item, "PNP")[0] == ["P1", "N", "P2"]
    pair = PairItem("0", "p", None, "POS", "NEG")
    assert [options_of(pair, o)[1:] for o in orderings(2)] == [(2, 1), (1, 2)]


def _answers(prompt: str, items: dict, answer) -> list[Answer]:
    out = []
    for item in items.values():
        for o in orderings(PROMPTS[prompt].n_options):
            out.append(Answer(item.id, item.subset, prompt, o, answer(item, o)))
    return out


def test_an_oracle_scores_100_everywhere() -> None:
    s = score_choices(
        _answers("scpp_order", TRIPLETS, lambda it, o: f"({options_of(it, o)[1]})"), TRIPLETS
    )
    assert s.accuracy == {("scpp_order", o): 100.0 for o in orderings(3)}
    assert s.circular == {"scpp_order": 100.0} and s.n_circular == {"scpp_order": 6}
    assert s.positions["scpp_order"] == pytest.approx({1: 100 / 3, 2: 100 / 3, 3: 100 / 3})
    pairs = score_choices(
        _answers("sc_gpt4v", PAIRS, lambda it, o: f"({options_of(it, o)[2]})"), PAIRS
    )
    assert pairs.accuracy == {("sc_gpt4v", "pos_first"): 100.0, ("sc_gpt4v", "neg_first"): 100.0}


def test_a_constant_first_option_model_shows_its_position_bias() -> None:
    s = score_choices(_answers("scpp_order", TRIPLETS, lambda it, o: "(1)"), TRIPLETS)
    assert s.accuracy == {
        ("scpp_order", "NPP"): 100.0, ("scpp_order", "PNP"): 0.0, ("scpp_order", "PPN"): 0.0,
    }  # fmt: skip
    assert s.circular["scpp_order"] == 0.0  # right only when N happens to come first
    assert s.positions["scpp_order"] == {1: 100.0, 2: 0.0, 3: 0.0}
    pairs = score_choices(_answers("sc_gpt4v", PAIRS, lambda it, o: "(1)"), PAIRS)
    assert pairs.accuracy == {("sc_gpt4v", "pos_first"): 100.0, ("sc_gpt4v", "neg_first"): 0.0}


def test_answers_naming_no_single_option_are_counted_never_hits() -> None:
    texts = iter(["I'm sorry, I cannot see the image.", "none", "(1) and (2)", "(3)"] * 10)
    s = score_choices(
        _answers("scpp1", dict(list(TRIPLETS.items())[:4]), lambda it, o: next(texts)), TRIPLETS
    )
    kinds = s.kinds["scpp1"]
    want = {"multiple": 25.0, "none": 25.0, "option": 25.0, "refusal": 25.0}
    assert kinds == pytest.approx(want)
    assert sum(s.hits.values()) == sum(
        1 for (key, _, o), p in s.parsed.items() if p.kind == "option" and o == "PPN"
    )
    with pytest.raises(KeyError, match="unknown item s/99"):
        score_choices([Answer("99", "s", "scpp1", "NPP", "(1)")], TRIPLETS)


# -- recorded answers from a file, through the CLI ------------------------------------------------


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from lexsem.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def test_score_answers_reads_a_file_and_prints_the_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders.fakes import TRIPLETS as ROWS
    from builders.fakes import register_fixture_benchmark

    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    lines = []
    for sub, rows in ROWS.items():
        for i, (_, _, n) in enumerate(rows):
            lines.append({"id": i, "subset": sub, "ordering": "NPP", "answer": "(1)"})
            lines.append({"id": i, "subset": sub, "ordering": "PNP", "answer": f'"{n}"'})
            lines.append({"id": i, "subset": sub, "ordering": "PPN", "answer": "I'm sorry."})
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    out = tmp_path / "scores.json"
    res = _cli("score-answers", path, "-b", "fixture_pp", "--prompt", "scpp_order",
               "--data-dir", data, "--json", out)  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "| scpp_order | NPP | 5/5 | 100.00 |" in res.output
    assert "| scpp_order | PNP | 5/5 | 100.00 |" in res.output  # the negative quoted back
    assert "| scpp_order | PPN | 5/5 | 0.00 |" in res.output
    assert "| scpp_order | 5/5 | 0.00 | (1) 50.0, (2) 50.0, (3) 0.0 |" in res.output
    assert "option 66.7, refusal 33.3" in res.output
    saved = json.loads(out.read_text())
    assert len(saved["answers"]) == 15 and sum(a["hit"] for a in saved["answers"]) == 10
    assert {a["rule"] for a in saved["answers"]} == {"leading", "quoted", "refusal"}


def test_score_answers_errors_name_the_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders.fakes import register_fixture_benchmark

    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    path = tmp_path / "a.jsonl"
    cases = [
        (
            '{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "(1)"}\n{bad',
            ":2: not valid JSON",
        ),
        ('{"id": 0, "subset": "swap_obj", "ordering": "NPP"}', "line 1: missing answer"),
        (
            '{"id": 0, "subset": "swap_obj", "ordering": "NPN", "answer": "1"}',
            "unknown ordering 'NPN'",
        ),
        ('{"id": 9, "subset": "swap_obj", "ordering": "NPP", "answer": "1"}', "item swap_obj/9"),
        ('{"id": 0, "ordering": "NPP", "answer": "1"}', "line 1: no subset"),
        (
            '{"id": 0, "subset": "swap_obj", "ordering": "pos_first", "answer": "1"}',
            "item swap_obj/0: ordering 'pos_first' is not one of a triplet's",
        ),
        (
            '{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "1"}\n'
            '{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "2"}',
            "two answers for swap_obj/0, prompt 'scpp3', NPP",
        ),
    ]
    for text, want in cases:
        path.write_text(text)
        res = _cli(
            "score-answers", path, "-b", "fixture_pp", "--prompt", "scpp3", "--data-dir", data
        )
        assert res.exit_code == 2, res.output
        assert "error:" in res.output and want in res.output and str(path) in res.output, res.output
    path.write_text('{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "1"}')
    res = _cli(
        "score-answers", path, "-b", "fixture_pp", "--prompt", "sc_gpt4v", "--data-dir", data
    )
    assert res.exit_code == 2 and "prompt 'sc_gpt4v' lists 2 options, the item has 3" in res.output
    res = _cli("score-answers", path, "-b", "fixture_pp", "--prompt", "scpp33", "--data-dir", data)
    assert res.exit_code == 2 and "unknown prompt 'scpp33' (did you mean 'scpp3'?)" in res.output
    res = _cli(
        "score-answers", path, "-b", "fixture_pp/swap_obj", "--prompt", "scpp3", "--data-dir", data
    )
    assert res.exit_code == 0, res.output  # one subset selected: records may leave it out

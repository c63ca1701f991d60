"""What a file of recorded answers covers (`lexsem score-answers`, `lexsem.ask.score_answers`):
the items of the benchmark it answers are scored, its answers about items the benchmark lacks
are left out and named, with the coverage in the output and the run record; `--strict-items`
makes such an answer an error naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.pair_answers import AUTHORS, pair_files, write_pair_answers
from lexsem.ask import score_answers
from lexsem.cli import app
from lexsem.errors import DataError

runner = CliRunner()
UNKNOWN = [{"id": "9", "subset": "swap_obj", "prompt": "sc_gpt4v", "ordering": o, "answer": "(1)"}
           for o in ("pos_first", "neg_first")]  # fmt: skip
LINES = "line 9, line 10"  # the file's 8 known answers first


def test_unknown_items_are_named_and_the_known_ones_scored(tmp_path: Path) -> None:
    sel, _ = pair_files(tmp_path)
    answers = write_pair_answers(tmp_path / "a.jsonl", UNKNOWN)
    res = runner.invoke(app, ["score-answers", str(answers), "-b", sel, "--run",
                              str(tmp_path / "run"), "--cache-dir",
                              str(tmp_path / "c")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "swap_obj: 4 of 4 items answered" in res.output
    assert (f"a.jsonl: 2 answers about an item not in the benchmark, not scored: swap_obj/9 "
            f"({LINES})") in res.output  # fmt: skip
    run = score_answers(answers, sel, cache_dir=tmp_path / "c", n_boot=0)
    hits = {r.metric: r.hits for r in run.record.results if r.subset == "swap_obj"}
    assert hits == AUTHORS  # the known items, scored as without the unknown answers
    cov = run.record.recorded
    assert cov is not None and cov.file == "a.jsonl" and cov.answers == 10
    assert cov.items_answered == {"swap_obj": 4} and cov.items_total == {"swap_obj": 4}
    assert [(u.where, u.subset, u.item_id) for u in cov.unknown] == [
        ("line 9", "swap_obj", "9"), ("line 10", "swap_obj", "9")]  # fmt: skip


def test_coverage_counts_the_items_answered(tmp_path: Path) -> None:
    sel, _ = pair_files(tmp_path)
    answers = tmp_path / "few.jsonl"
    answers.write_text(json.dumps({"id": "2", "subset": "swap_obj", "prompt": "sc_gpt4v",
                                   "ordering": "pos_first", "answer": "(1)"}))  # fmt: skip
    res = runner.invoke(app, ["score-answers", str(answers), "-b", sel, "--cache-dir",
                              str(tmp_path / "c")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "swap_obj: 1 of 4 items answered" in res.output
    assert "not in the benchmark" not in res.output


def test_strict_items_makes_an_unknown_item_an_error_naming_the_file_and_line(
    tmp_path: Path,
) -> None:
    sel, _ = pair_files(tmp_path)
    answers = write_pair_answers(tmp_path / "a.jsonl", UNKNOWN)
    res = runner.invoke(app, ["score-answers", str(answers), "-b", sel, "--strict-items",
                              "--cache-dir", str(tmp_path / "c")])  # fmt: skip
    assert res.exit_code != 0
    (line,) = [x for x in res.output.splitlines() if x.strip()]
    assert line.startswith("error: ") and "a.jsonl, line 9" in line and "swap_obj/9" in line
    with pytest.raises(DataError, match=r"a\.jsonl, line 9: .*swap_obj/9"):
        score_answers(answers, sel, strict_items=True, cache_dir=tmp_path / "c", n_boot=0)


def test_a_file_about_no_item_of_the_benchmark_is_an_error(tmp_path: Path) -> None:
    sel, _ = pair_files(tmp_path)
    answers = tmp_path / "none.jsonl"
    answers.write_text("\n".join(json.dumps(r) for r in UNKNOWN))
    with pytest.raises(DataError, match=r"none\.jsonl, line 1: .*swap_obj/9.*no answer"):
        score_answers(answers, sel, cache_dir=tmp_path / "c", n_boot=0)


def test_the_printed_tables_show_items_answered_of_the_benchmark(tmp_path: Path) -> None:
    """Answers about 2 of the 4 items: every accuracy row says 2/4, and the note says the
    accuracies are over the answered items only; answers about all 4 say 4/4, no such note."""
    sel, _ = pair_files(tmp_path)
    every = write_pair_answers(tmp_path / "all.jsonl")
    rows = [json.loads(line) for line in every.read_text(encoding="utf-8").splitlines()]
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] in ("0", "1")))
    out = tmp_path / "scores.json"
    args = ["-b", sel, "--cache-dir", str(tmp_path / "c")]
    res = runner.invoke(app, ["score-answers", str(few), *args, "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "| sc_gpt4v | pos_first | 2/4 |" in res.stdout
    assert "| sc_gpt4v | neg_first | 2/4 |" in res.stdout
    assert "| sc_gpt4v | 2/4 |" in res.stdout  # circular
    assert "coverage below 100%: each accuracy is over the items answered only" in res.stdout
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert {(a["n"], a["items_total"]) for a in saved["accuracy"]} == {(2, 4)}
    res = runner.invoke(app, ["score-answers", str(every), *args])
    assert res.exit_code == 0, res.output
    assert "| sc_gpt4v | pos_first | 4/4 |" in res.stdout and "coverage below" not in res.stdout

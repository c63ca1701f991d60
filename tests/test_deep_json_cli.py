"""A JSON file nested 200,000 deep given to `validate`, `score-answers` or `convert-answers`:
one `error:` line naming the file (exit 2), never a RecursionError, nothing written. Every
whole-file JSON read goes through `lexsem.jsonl.read_json` (`build`:
tests/test_build_bad_inputs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.fakes import register_fixture_benchmark
from lexsem.cli import app
from lexsem.jsonl import MAX_DEPTH

runner = CliRunner()
DEEP = "[" * 200_000 + "]" * 200_000


def _one_line(args: list[str], path: Path) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output == f"error: {path}: JSON nested more than {MAX_DEPTH} deep\n"


def test_validate_a_deep_benchmark_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP, encoding="utf-8")
    report = tmp_path / "report.json"
    _one_line(["validate", f"scpp:{path}", "--json", str(report)], path)
    assert not report.exists()


def test_score_answers_a_deep_answers_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    path = tmp_path / "answers.json"
    path.write_text(DEEP, encoding="utf-8")
    out = tmp_path / "scores.json"
    _one_line(["score-answers", str(path), "-b", "fixture_pp", "--data-dir", str(data),
               "--prompt", "scpp3", "--json", str(out)], path)  # fmt: skip
    assert not out.exists()


def test_convert_answers_a_deep_published_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.benchmarks import load as bench_load

    folder = tmp_path / "gpt-4v-results" / "positive-first"
    folder.mkdir(parents=True)
    path = folder / "gpt4v-swap_obj.json"
    path.write_text('{"0": ' + DEEP + "}", encoding="utf-8")

    class Item:
        subset, id = "swap_obj", "0"

    class Loaded:
        items = (Item(),)

    monkeypatch.setattr(bench_load, "load_benchmark", lambda *a, **k: Loaded())
    out = tmp_path / "answers.jsonl"
    _one_line(["convert-answers", str(folder.parent), str(out)], path)
    assert not out.exists()


def test_validate_a_build_whose_data_card_is_nested_too_deep(tmp_path: Path) -> None:
    card = tmp_path / "b" / "benchmark" / "data_card.json"
    card.parent.mkdir(parents=True)
    card.write_text('{"files": ' + DEEP + "}", encoding="utf-8")
    _one_line(["validate", f"build:{tmp_path / 'b'}"], card)

"""Recorded answers as a run (`lexsem score-answers FILE --run OUT`): the answers of a model
run elsewhere become a run folder read by the same task as a local model's answers, usable by
`compare` (McNemar) and `report`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from builders.fakes import TRIPLETS, scpp_user_files
from lexsem.cli import app
from lexsem.results.run import Run
from lexsem.stats.bootstrap import MICRO

runner = CliRunner()
ORDERINGS = ("NPP", "PNP", "PPN")
RIGHT = {"NPP": "(1)", "PNP": "(2)", "PPN": "(3)"}  # where the negative stands


def write_answers(
    path: Path, answer: dict[str, str], skip: frozenset[tuple[str, int, str]] = frozenset()
) -> Path:
    rows = [
        {"id": i, "subset": sub, "ordering": o, "answer": answer[o], "prompt": "scpp3"}
        for sub, items in TRIPLETS.items()
        for i in range(len(items))
        for o in ORDERINGS
        if (sub, i, o) not in skip
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def score(tmp_path: Path, answers: Path, out: Path, *extra: str) -> Run:
    sel, _ = (
        scpp_user_files(tmp_path)
        if not (tmp_path / "triplets").exists()
        else (f"scpp:{tmp_path / 'triplets'}", None)
    )
    res = runner.invoke(app, ["score-answers", str(answers), "-b", sel, "--run", str(out),
                              "--cache-dir", str(tmp_path / "c"), *extra])  # fmt: skip
    assert res.exit_code == 0, res.output
    return Run.load(out)


def test_a_recorded_run_scores_like_the_task_and_compares(tmp_path: Path) -> None:
    oracle = score(tmp_path, write_answers(tmp_path / "o.jsonl", RIGHT), tmp_path / "oracle")
    ones = {o: "(1)" for o in ORDERINGS}
    first = score(tmp_path, write_answers(tmp_path / "one.jsonl", ones), tmp_path / "one",
                  "--name", "always-1")  # fmt: skip
    acc = {r.metric: r.accuracy for r in first.record.results if r.subset == MICRO}
    assert acc == {"NPP": 100.0, "PNP": 0.0, "PPN": 0.0, "circular": 0.0}
    assert {r.accuracy for r in oracle.record.results if r.subset == MICRO} == {100.0}
    assert first.record.model.name == "always-1" and oracle.record.model.name == "o"
    assert first.record.model.fingerprint["backend"] == "recorded"
    assert set(first.items.column("text_answer_PNP").to_pylist()) == {"(1)"}
    res = runner.invoke(app, ["compare", str(tmp_path / "oracle"), str(tmp_path / "one"),
                              "--metric", "circular"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "| 5 | 100.00 | 0.00 | 5 | 0 |" in res.output  # 5 items right only under A


def test_an_item_without_every_answer_counts_where_it_was_answered(tmp_path: Path) -> None:
    """An ordering's accuracy is over the items answered in it; circular needs every ordering."""
    path = write_answers(tmp_path / "a.jsonl", RIGHT, skip=frozenset({("swap_obj", 0, "PNP")}))
    run = score(tmp_path, path, tmp_path / "run")
    rows = run.items.to_pylist()
    ids = {(r["subset"], r["item_id"]) for r in rows}
    assert ("swap_obj", "0") in ids and len(ids) == 5
    without = {r["metric"] for r in rows if (r["subset"], r["item_id"]) == ("swap_obj", "0")}
    assert without == {"NPP", "PPN"}  # not PNP (no answer), not circular (needs all three)
    scored = {(r.metric, r.subset): r.items_scored for r in run.record.results}
    assert scored[("NPP", "swap_obj")] == 3 and scored[("PNP", "swap_obj")] == 2
    assert scored[("circular", "swap_obj")] == 2
    assert run.record.benchmarks[0].skipped == {}  # answered in some ordering: not skipped


def test_an_answer_about_an_unknown_item_is_an_error_naming_the_file(tmp_path: Path) -> None:
    sel, _ = scpp_user_files(tmp_path)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": 9, "subset": "swap_obj", "ordering": "NPP",
                                "answer": "(1)", "prompt": "scpp3"}))  # fmt: skip
    res = runner.invoke(app, ["score-answers", str(path), "-b", sel, "--run", str(tmp_path / "r")])
    assert res.exit_code != 0 and "bad.jsonl" in res.output and "swap_obj/9" in res.output
    assert not (tmp_path / "r" / "run.json").exists()


def test_the_shots_a_file_records_reach_the_runs_fingerprint(tmp_path: Path) -> None:
    path = write_answers(tmp_path / "shots.jsonl", RIGHT)
    rows = [
        {**json.loads(line), "shots": 4, "shot_seed": 1} for line in path.read_text().splitlines()
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    run = score(tmp_path, path, tmp_path / "run")
    assert (run.record.model.fingerprint["shots"], run.record.model.fingerprint["shot_seed"]) == (
        4,
        1,
    )
    plain = score(tmp_path, write_answers(tmp_path / "plain.jsonl", RIGHT), tmp_path / "plain")
    assert "shots" not in plain.record.model.fingerprint

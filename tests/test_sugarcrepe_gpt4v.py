"""SugarCrepe's published GPT-4V answers into lexsem's answers format
(`lexsem.benchmarks.sugarcrepe_gpt4v`, `lexsem convert-answers`), on a folder
fabricated in the published shape; and, where LEXSEM_GPT4V_RESULTS names the published folder
(an optional test, skipped without it, in CI too: the folder is not part of the test data), the
replay of every published answer: the readme's 14 counts and every record's `correct` flag."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from builders.pair_answers import PAIRS, pair_files
from lexsem.benchmarks.items import PairItem
from lexsem.benchmarks.sugarcrepe_gpt4v import convert_gpt4v_answers, write_gpt4v_answers
from lexsem.errors import DataError

ITEMS = [PairItem(str(i), "swap_obj", f"{i}.jpg", p, n) for i, (p, n) in enumerate(PAIRS)]


def _record(i: int, answer: str, correct: bool, **change: str) -> dict[str, Any]:
    pos, neg = PAIRS[i] if i < len(PAIRS) else ("An extra item.", "An item extra.")
    rec = {
        "answer": {"free_form_answer": answer, "multiple_choice_answer": ""},
        "caption": pos,
        "negative_caption": neg,
        "filename": f"{i}.jpg",
        "correct": correct,
    }
    return {**rec, **change}  # fmt: skip


def published_folder(tmp_path: Path, **change: str) -> Path:
    """Two orderings of swap_obj: items 0-2 and 7 (no public item), a summary entry."""
    folder = tmp_path / "gpt-4v-results"
    first = {"0": _record(0, "(1)", True, **change), "1": _record(1, "2", False),
             "7": _record(7, "(1)", True), "2": _record(2, "Neither (1) nor (2)", False),
             "accuracy": 0.5}  # fmt: skip
    second = {"0": _record(0, "(2)", True), "1": _record(1, "Neither caption fits. (2)", True),
              "2": _record(2, "(1)", False), "7": _record(7, "(2)", True)}  # fmt: skip
    for name, data in (("positive-first", first), ("negative-first", second)):
        (folder / name).mkdir(parents=True)
        (folder / name / "gpt4v-swap_obj.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_the_converter_matches_records_to_items_and_keeps_the_unmatched(tmp_path: Path) -> None:
    records, stats = convert_gpt4v_answers(published_folder(tmp_path), ITEMS)
    by = {(r["ordering"], r["id"]): r for r in records}
    assert len(records) == 8 and {r["prompt"] for r in records} == {"sc_gpt4v"}
    assert by[("pos_first", "1")]["answer"] == "2"
    assert by[("neg_first", "1")]["answer"] == "Neither caption fits. (2)"
    assert {r["subset"] for r in records} == {"swap_obj"}
    assert stats.unmatched == [("pos_first", "swap_obj", "7"), ("neg_first", "swap_obj", "7")]
    assert stats.answers == {("pos_first", "swap_obj"): 4, ("neg_first", "swap_obj"): 4}
    assert [k for _, k in stats.not_records] == ["accuracy"]


def test_a_record_whose_caption_is_not_the_items_is_an_error(tmp_path: Path) -> None:
    folder = published_folder(tmp_path, caption="Another caption.")
    with pytest.raises(DataError, match=r"gpt4v-swap_obj\.json, item 0: caption"):
        convert_gpt4v_answers(folder, ITEMS)
    folder = published_folder(tmp_path / "b", filename="9.jpg")
    with pytest.raises(DataError, match=r"filename '9\.jpg'"):
        convert_gpt4v_answers(folder, ITEMS)
    with pytest.raises(DataError, match="no published answers"):
        convert_gpt4v_answers(tmp_path / "empty", ITEMS)


def test_the_converted_answers_replay_as_the_authors_counted(tmp_path: Path) -> None:
    """The fabricated `correct` flags are the authors' rule by hand: 1 of 3 public items
    right positive-first, 2 of 3 negative-first; item 7 named as unknown."""
    from lexsem.ask import score_answers

    sel, _ = pair_files(tmp_path)
    out = tmp_path / "gpt4v.jsonl"
    write_gpt4v_answers(published_folder(tmp_path), ITEMS, out)
    run = score_answers(out, sel, cache_dir=tmp_path / "c", n_boot=0)
    hits = {r.metric: (r.hits, r.n) for r in run.record.results if r.subset == "swap_obj"}
    assert hits["pos_first"] == (1, 3) and hits["neg_first"] == (2, 3)
    assert run.record.recorded is not None
    assert {u.item_id for u in run.record.recorded.unknown} == {"7"}


def test_the_command_converts_a_folder_and_keeps_what_it_was_given(
    tmp_path: Path, test_data_dir: Path
) -> None:
    """On the public swap_obj file: two of its items and one it lacks, in the published shape;
    an existing output lexsem did not write is kept unless --force (its own is replaced); a
    published file is never an output, a new file inside the folder may be."""
    from typer.testing import CliRunner

    from lexsem.cli.app import app

    public = json.loads((test_data_dir / "sugarcrepe" / "swap_obj.json").read_text("utf-8"))
    folder = tmp_path / "gpt-4v-results" / "positive-first"
    folder.mkdir(parents=True)
    recs = {k: {"answer": {"free_form_answer": "(1)"}, **public[k], "correct": True}
            for k in ("0", "1")}  # fmt: skip
    recs["999"] = {"answer": {"free_form_answer": "(2)"}, "caption": "x", "negative_caption": "y",
                   "filename": "z.jpg", "correct": False}  # fmt: skip
    (folder / "gpt4v-swap_obj.json").write_text(json.dumps(recs), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["convert-answers", str(folder.parent), str(out), "--data-dir", str(test_data_dir),
            "--subset", "swap_obj"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [(r["id"], r["ordering"], r["answer"]) for r in rows] == [
        ("0", "pos_first", "(1)"),
        ("1", "pos_first", "(1)"),
        ("999", "pos_first", "(2)"),
    ]
    assert "pos_first swap_obj: 3 answers" in res.stdout
    assert "item 999 is about no public item (kept)" in res.stdout
    assert all(
        line.startswith('{"generator": "lexsem", ') for line in out.read_text().split("\n")[:-1]
    )
    converted = out.read_bytes()
    out.write_bytes(converted + b"\n")  # its own output (edited) is replaced without --force
    assert CliRunner().invoke(app, args).exit_code == 0 and out.read_bytes() == converted
    mine = b'{"id": "0", "ordering": "pos_first", "answer": "(2)"}\n'  # a user's, no mark
    out.write_bytes(mine)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2
    assert f"OUT {out} exists and was not written by lexsem; pass --force" in again.output
    assert out.read_bytes() == mine
    assert CliRunner().invoke(app, [*args, "--force"]).exit_code == 0
    assert out.read_bytes() == converted
    published = folder / "gpt4v-swap_obj.json"
    before = published.read_bytes()
    res = CliRunner().invoke(app, [*args[:2], str(published), *args[3:], "--force"])
    assert res.exit_code == 2 and "(a folder this command reads)" in res.output
    assert published.read_bytes() == before
    inside = [*args[:2], str(folder / "out.jsonl"), *args[3:]]  # a new file: no input
    assert CliRunner().invoke(app, inside).exit_code == 0
    assert (folder / "out.jsonl").read_bytes() == converted


# -- the published folder -----------------------------------------------------------------------

PUBLISHED = {  # gpt-4v-results/readme.md: right answers of 14 runs (swap_obj: of 246)
    "pos_first": {"add_att": 604, "add_obj": 1859, "replace_att": 734, "replace_obj": 1578,
                  "replace_rel": 1240, "swap_att": 607, "swap_obj": 211},
    "neg_first": {"add_att": 666, "add_obj": 1918, "replace_att": 740, "replace_obj": 1604,
                  "replace_rel": 1298, "swap_att": 593, "swap_obj": 198},
}  # fmt: skip
RESULTS = os.environ.get("LEXSEM_GPT4V_RESULTS")


@pytest.mark.skipif(not RESULTS, reason="LEXSEM_GPT4V_RESULTS (the published folder) unset")
def test_the_published_answers_replay_to_the_published_numbers(
    tmp_path: Path, test_data_dir: Path
) -> None:
    from lexsem.ask import score_answers
    from lexsem.benchmarks.load import load_benchmark

    folder = Path(str(RESULTS))
    bench = load_benchmark("sugarcrepe", data_dir=test_data_dir, offline=True)
    out = tmp_path / "gpt4v.jsonl"
    stats = write_gpt4v_answers(folder, bench.items, out)
    assert stats.unmatched == [("pos_first", "swap_obj", "108"), ("neg_first", "swap_obj", "108")]
    run = score_answers(out, "sugarcrepe", data_dir=test_data_dir, cache_dir=tmp_path / "c",
                        n_boot=0)  # fmt: skip
    for ordering, counts in PUBLISHED.items():
        for subset, published in counts.items():
            hits = run.record.result("sugarcrepe", ordering, subset).hits
            # swap_obj: the published count includes the right answer about item 108
            assert hits == published - (subset == "swap_obj"), (ordering, subset)
    # every published verdict, item by item
    mine = {(r["subset"], r["item_id"], r["metric"]): r["hit"] for r in run.items.to_pylist()}
    checked = 0
    for name, ordering in (("positive-first", "pos_first"), ("negative-first", "neg_first")):
        for path in sorted((folder / name).glob("gpt4v-*.json")):
            subset = path.stem.removeprefix("gpt4v-")
            for key, rec in json.loads(path.read_text(encoding="utf-8")).items():
                if isinstance(rec, dict) and (subset, key) != ("swap_obj", "108"):
                    assert mine[(subset, key, ordering)] is rec["correct"], (path.name, key)
                    checked += 1
    assert checked == 15022


def test_two_answers_for_one_key_are_refused_naming_both_lines(tmp_path: Path) -> None:
    """A published file giving the key "1" twice (a JSON reader keeps the last silently): an
    error naming the file, the key and both lines; nothing is written."""
    folder = published_folder(tmp_path)
    path = folder / "positive-first" / "gpt4v-swap_obj.json"
    entries = [("0", _record(0, "(1)", True)), ("1", _record(1, "2", False)),
               ("2", _record(2, "(1)", False)), ("1", _record(1, "(1)", True))]  # fmt: skip
    path.write_text(
        "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in entries) + "\n}\n",
        encoding="utf-8",
    )
    out = tmp_path / "answers.jsonl"
    with pytest.raises(DataError) as info:
        write_gpt4v_answers(folder, ITEMS, out)
    message = str(info.value)
    assert "\n" not in message and "gpt4v-swap_obj.json" in message
    assert "two answers for the key '1', on lines 3 and 5" in message
    assert not out.exists()
    nested = {"0": {**_record(0, "(1)", True), "extra": {"a": 1, "b": {"c": []}}}}
    path.write_text(json.dumps(nested, indent=1), encoding="utf-8")
    records, _ = convert_gpt4v_answers(folder, ITEMS[:1])
    assert [r["id"] for r in records if r["ordering"] == "pos_first"] == ["0"]


def test_a_published_file_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    from lexsem.jsonl import MAX_DEPTH

    folder = published_folder(tmp_path)
    path = folder / "positive-first" / "gpt4v-swap_obj.json"
    path.write_text('{"0": ' + "[" * 200_000 + "]" * 200_000 + "}", encoding="utf-8")
    with pytest.raises(DataError, match=f"JSON nested more than {MAX_DEPTH} deep"):
        convert_gpt4v_answers(folder, ITEMS)

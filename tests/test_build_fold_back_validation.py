"""Stage `fold_back_validation` (`lexsem.construct.fold_back_validation`): a validation
study's accept / edit / reject answers folded into a build's rows, and counted in build.json
and the frozen benchmark's data card."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from builders.answers_table import answer, table
from builders.recipes import recipe_toml, stage, write_jsonl
from lexsem.cli.app import app
from lexsem.construct.fold_back_validation import fold_back_validation
from lexsem.construct.stage import HumanStepPending, StageContext
from lexsem.errors import DataError, LexsemError


def _rows() -> pa.Table:
    return pa.table(
        {
            "source": ["f"] * 6,
            "source_id": [str(k) for k in range(6)],
            "caption": [f"original {k}" for k in range(6)],
            "caption2": [f"generated {k}" for k in range(6)],
            "rejected": [None, None, None, None, None, "duplicated"],
        }
    )


def _v(item: str, who: str, choice: str, edit: str | None = None, **kw: object) -> dict:
    return answer("validate", item, who, choice, edit=edit, **kw)  # type: ignore[arg-type]


ANSWERS = [
    _v("f:0", "a", "accept"), _v("f:0", "b", "accept"),
    _v("f:1", "a", "edit", "fixed 1"), _v("f:1", "b", "edit", "fixed 1 other"),
    _v("f:1", "c", "edit", "fixed 1 other"),  # the most frequent edit wins
    _v("f:2", "a", "reject"), _v("f:2", "b", "reject"), _v("f:2", "c", "edit", "x"),
    _v("f:3", "a", "accept"), _v("f:3", "b", "reject"),  # a split
    _v("f:5", "a", "reject"),  # already rejected: keeps its first reason
    _v("f:4", "a", "reject", practice=True), _v("f:4", "b", "skip"),  # no answer
]  # fmt: skip


def test_accepted_edited_rejected_rows(tmp_path: Path) -> None:
    ctx = StageContext(tmp_path)
    out = fold_back_validation(_rows(), ctx, answers=table(ANSWERS)).to_pylist()
    assert [r["validation"] for r in out] == [
        "accepted", "edited", "rejected", "disagreement", None, "rejected"]  # fmt: skip
    assert [r["rejected"] for r in out] == [
        None, None, "human_rejected", "human_disagreement", None, "duplicated"]  # fmt: skip
    assert out[1]["caption2"] == "fixed 1 other" and out[1]["caption2_original"] == "generated 1"
    assert out[0]["caption2"] == "generated 0" and out[0]["caption2_original"] is None
    assert out[2]["caption2"] == "generated 2"  # a rejected row keeps its text
    assert dict(ctx.counts) == {
        "accepted": 1, "edited": 1, "human_rejected": 2, "human_disagreement": 1,
        "not validated": 1, "answers about other rows": 0, "already rejected": 1,
    }  # fmt: skip
    strict = fold_back_validation(_rows(), None, answers=table(ANSWERS), unvalidated="reject")
    assert strict.column("rejected").to_pylist()[4] == "not_validated"


def test_keep_first_of_keeps_one_kept_row_per_value(tmp_path: Path) -> None:
    """VISLA's experts select one of a pair's candidates: the first kept one, in table order."""
    rows = _rows().append_column("pair", pa.array(["p", "p", "p", "q", "q", "q"]))
    answers = [_v("f:0", "a", "reject"), _v("f:1", "a", "accept"), _v("f:2", "a", "edit", "e"),
               _v("f:3", "a", "accept"), _v("f:4", "a", "accept")]  # fmt: skip
    ctx = StageContext(tmp_path)
    out = fold_back_validation(rows, ctx, answers=table(answers), keep_first_of="pair")
    assert out.column("rejected").to_pylist() == [
        "human_rejected", None, "another_selected", None, "another_selected", "duplicated",
    ]  # fmt: skip
    assert ctx.counts["another_selected"] == 2
    with pytest.raises(LexsemError, match=r"no column 'pairs' \(setting `keep_first_of`\)"):
        fold_back_validation(rows, None, answers=table(answers), keep_first_of="pairs")


def test_bad_answers_and_settings_are_refused(tmp_path: Path) -> None:
    stray = [*ANSWERS, _v("g:9", "a", "accept")]
    with pytest.raises(DataError, match=r"1 row\(s\) the build does not have, e.g. g:9"):
        fold_back_validation(_rows(), None, answers=table(stray))
    kept = fold_back_validation(_rows(), None, answers=table(stray), unknown="ignore")
    assert kept.num_rows == 6
    with pytest.raises(DataError, match="row 1: an edit without the edited text"):
        fold_back_validation(_rows(), None, answers=table([_v("f:0", "a", "edit")]))
    with pytest.raises(DataError, match="row 2: item 'f:0': annotator a answered it again"):
        fold_back_validation(_rows(), None, answers=table([_v("f:0", "a", "accept")] * 2))
    with pytest.raises(DataError, match="accept, edit or reject, not 'maybe'"):
        fold_back_validation(_rows(), None, answers=table([_v("f:0", "a", "maybe")]))
    with pytest.raises(LexsemError, match="no column 'p2'"):
        fold_back_validation(_rows(), None, answers=table(ANSWERS), column="p2")
    with pytest.raises(HumanStepPending, match=r"waiting for people: no answers file .*missing"):
        fold_back_validation(_rows(), StageContext(tmp_path), answers="missing.parquet")


def test_no_accepted_row_is_nothing_to_wait_for(tmp_path: Path) -> None:
    # every generated text rejected before the study: no study of 0 items to pause for
    rows = _rows().set_column(4, "rejected", pa.array(["superfluous output"] * 6))
    ctx = StageContext(tmp_path)
    out = fold_back_validation(rows, ctx, answers="missing.parquet")
    assert out.equals(rows) and "accepted" in ctx.counts and ctx.counts["accepted"] == 0
    assert not (tmp_path / "human").exists()
    with pytest.raises(HumanStepPending, match=r"1 row to validate"):  # one left: it waits
        fold_back_validation(_rows().slice(0, 1), ctx, answers="missing.parquet")


def test_a_negative_without_p2_is_the_studys_negative(tmp_path: Path) -> None:
    # `negative = true`: the checked column is the study's role `negative` (shown as N beside
    # P1 alone), in the pause's commands and its README
    rows = _rows().rename_columns(["source", "source_id", "caption", "negative_caption",
                                   "rejected"])  # fmt: skip
    with pytest.raises(HumanStepPending, match=r"reject 'negative_caption'") as paused:
        fold_back_validation(rows, StageContext(tmp_path), column="negative_caption",
                             negative=True)  # fmt: skip
    create = paused.value.commands[0]
    assert "-k validate --column original=caption --column negative=negative_caption " in create
    assert create.endswith(f"--name '{tmp_path.name}: validation'")
    readme = (tmp_path / "human" / "validate" / "README.md").read_text()
    assert create in readme and "negative: `negative_caption`" in readme


RECIPE = recipe_toml(
    "validated", 1,
    stage("fold_back_validation", answers="{answers}", column="p2"),
    stage("freeze", format="scpp"),
)  # fmt: skip


def test_a_recipe_folds_back_and_the_card_counts_it(tmp_path: Path) -> None:
    triplets = [
        {"p1": "a dog on a sofa", "p2": "a sofa wit a dog on it", "n": "a sofa on a dog"},
        {"p1": "two cats near a box", "p2": "a box near two cats", "n": "two boxes near a cat"},
        {"p1": "a man rides a horse", "p2": "a horse rides a man", "n": "a horse rides a man!"},
    ]
    write_jsonl(tmp_path / "triplets.jsonl", triplets)
    out = tmp_path / "build"
    # the build's row ids: run the input alone first to learn its provenance
    from lexsem.construct.inputs import read_input

    rows = read_input(tmp_path / "triplets.jsonl", None, {})
    ids = [f"{s}:{i}" for s, i in zip(rows.rows["source"].to_pylist(),
                                      rows.rows["source_id"].to_pylist(), strict=True)]  # fmt: skip
    answers = table([_v(ids[0], "a", "edit", "a sofa with a dog on it"), _v(ids[1], "a", "accept"),
                     _v(ids[2], "a", "reject")])  # fmt: skip
    pq.write_table(answers, tmp_path / "answers.parquet")
    (tmp_path / "recipe.toml").write_text(RECIPE.format(answers=tmp_path / "answers.parquet"))
    res = CliRunner().invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    card = json.loads((out / "benchmark" / "data_card.json").read_text(encoding="utf-8"))
    assert card["rows"]["frozen"] == 2 and card["rows"]["left_out"] == {"human_rejected": 1}
    stage = next(s for s in card["build"]["stages"] if s["use"] == "fold_back_validation")
    assert stage["counts"]["edited"] == 1 and stage["counts"]["accepted"] == 1
    assert stage["rejected"] == {"human_rejected": 1}
    frozen = json.loads((out / "benchmark" / "all.json").read_text(encoding="utf-8"))
    assert [t["caption2"] for t in frozen] == ["a sofa with a dog on it", "a box near two cats"]
    assert "human_rejected: 1" in (out / "benchmark" / "README.md").read_text("utf-8")

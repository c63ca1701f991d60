"""Stage `baseline_scores` (docs/building.md, "Baselines in the data card"): a frozen build
evaluated by given models through the evaluation path, their accuracies and intervals in the
data card, equal to a separate `lexsem eval` of the same benchmark."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.recipes import recipe_toml, stage, write_recipe
from builders.tiny_text_scorers import write_tiny_gpt2
from lexsem.cli.app import app

runner = CliRunner()

TRIPLETS = [
    {"p1": "a dog on a sofa", "p2": "a sofa with a dog on it", "n": "a sofa on a dog"},
    {"p1": "two cats near a box", "p2": "a box near two cats", "n": "two boxes near a cat"},
    {"p1": "a man rides a horse", "p2": "a horse carries a man", "n": "a horse rides a man"},
    {"p1": "a red cup", "p2": "a cup that is red", "n": "a cup and a red"},
]


def _recipe(*before: dict[str, Any]) -> str:
    """The recipe: the given stages, then baseline_scores of the models `_build` names."""
    scores = stage("baseline_scores", models="{models}", n_boot=200)
    return recipe_toml("tiny-baselines", 3, *before, scores)


RECIPE = _recipe(stage("freeze", format="scpp", title="Tiny"))


def _build(tmp_path: Path, models: list[str], recipe: str = RECIPE) -> tuple[Path, str]:
    write_recipe(tmp_path, recipe.replace('"{models}"', json.dumps(models)), TRIPLETS)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    return out, res.output if res.exit_code == 0 else f"exit {res.exit_code}: {res.output}"


def test_baselines_in_the_card_equal_a_separate_eval(tmp_path: Path) -> None:
    gpt2 = write_tiny_gpt2(tmp_path / "gpt2")
    models = [f"lm:{gpt2}", "minilm"]
    out, said = _build(tmp_path, models)
    assert not said.startswith("exit"), said
    card_path = out / "benchmark" / "data_card.json"
    card = json.loads(card_path.read_text())
    files_sha = {f["file"]: f["sha256"] for f in card["files"]}
    for name, sha in files_sha.items():  # the items are not touched
        assert hashlib.sha256((out / "benchmark" / name).read_bytes()).hexdigest() == sha
    assert {b["model"] for b in card["baselines"]} == set(models)
    for index, spec in enumerate(models, 1):
        mine = [b for b in card["baselines"] if b["model"] == spec]
        assert (out / mine[0]["run"] / "run.json").is_file()
        other = tmp_path / f"eval{index}"
        res = runner.invoke(
            app,
            ["eval", "-m", spec, "-b", f"build:{out}", "-o", str(other), "--seed", "3",
             "--n-boot", "200"],
        )  # fmt: skip
        assert res.exit_code == 0, res.output
        record = json.loads((other / "run.json").read_text())
        expect = {
            (r["task"], r["metric"], r["subset"]): (r["accuracy"], r["ci_low"], r["ci_high"])
            for r in record["results"]
        }
        got = {(b["task"], b["metric"], b["subset"]): (b["accuracy"], b["ci_low"], b["ci_high"])
               for b in mine}  # fmt: skip
        assert got == expect and got
    md = (out / "benchmark" / "README.md").read_text()
    assert "## Baselines" in md and "| minilm | tot |" in md
    # the card still opens as a benchmark
    res = runner.invoke(app, ["validate", f"build:{out}"])
    assert res.exit_code == 0, res.output


def test_baselines_before_freeze_is_refused(tmp_path: Path) -> None:
    recipe = _recipe(stage("caption_format", column="p1"))
    _out, said = _build(tmp_path, ["minilm"], recipe)
    assert said.startswith("exit 2") and "put the stage after `freeze`" in said, said


@pytest.mark.parametrize(
    ("models", "message"),
    [([], "non-empty list of model specs"), (["minilm"] * 51, "at most 50 models")],
)
def test_bad_model_lists(tmp_path: Path, models: list[str], message: str) -> None:
    _out, said = _build(tmp_path, models)
    assert said.startswith("exit 2") and message in said, said

"""The registries of `lexsem build` and of the study kinds (`lexsem.construct.catalog`,
`lexsem.annotate.kinds`): built-in entries declared up front and lazy, names suggested, and
`lexsem list recipes | stages | kinds | executors | tables`, one entry a line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexsem.annotate.kinds import KINDS
from lexsem.cli import app
from lexsem.construct.catalog import RECIPES, SOURCES, STAGES, find_recipe, register_stage
from lexsem.construct.inputs import read_input
from lexsem.construct.stage import Stage
from lexsem.errors import LexsemError

RECIPE_FILES = Path(__file__).resolve().parents[1] / "src" / "lexsem" / "construct" / "recipes"


def test_every_shipped_recipe_is_registered_and_every_entry_loads() -> None:
    assert RECIPES.names() == sorted(p.stem for p in RECIPE_FILES.glob("*.toml"))
    assert find_recipe("bivlc") == RECIPE_FILES / "bivlc.toml"
    for name in STAGES.names():
        assert STAGES.get(name).name == name  # the lazy entry names the stage it is
    for name in KINDS.names():
        assert KINDS.get(name).name == name
    assert callable(SOURCES.get("vsr")) and callable(SOURCES.get("coco_captions"))


def test_a_folder_named_like_a_shipped_recipe_is_not_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `lexsem build bivlc -o bivlc`, run again after its pause: ./bivlc is the build folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bivlc").mkdir()
    assert find_recipe("bivlc") == RECIPE_FILES / "bivlc.toml"
    (tmp_path / "mine.toml").write_text('name = "mine"')
    assert find_recipe("mine.toml") == Path("mine.toml")  # a file is still read as given


def test_registries_are_declared_without_importing_the_stage_modules() -> None:
    code = (
        "import sys; from lexsem.construct.catalog import STAGES; "
        "from lexsem.annotate.kinds import KINDS; "
        "assert 'freeze' in STAGES and 'validate' in KINDS; "
        "print(sorted(m for m in sys.modules if m.startswith(('lexsem.construct.', "
        "'lexsem.annotate.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        ["lexsem.annotate.kinds", "lexsem.construct.catalog", "lexsem.construct.stage"]
    )


def test_unknown_names_suggest_the_close_one() -> None:
    with pytest.raises(LexsemError, match=r"unknown stage 'caption_formats' \(did you mean "):
        STAGES.get("caption_formats")
    with pytest.raises(LexsemError, match=r"unknown input source 'vrs' \(did you mean 'vsr'"):
        read_input(None, "vrs", {})


def test_a_taken_stage_name_is_refused_unless_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(STAGES, "_entries", dict(STAGES._entries))

    def mine(rows: object, ctx: object) -> object:
        return rows

    with pytest.raises(LexsemError, match="stage 'freeze' is already registered"):
        register_stage("freeze", mine)
    register_stage("mine", mine)
    register_stage("mine", mine)  # the same function again (its module imported twice)
    register_stage("freeze", mine, replace=True)
    assert STAGES.get("freeze") == Stage("freeze", mine)
    with pytest.raises(LexsemError, match="letters, digits"):
        register_stage("no-dash", mine)


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("recipes", ["bivlc ", "trohn_text ", "(trohn_text.toml)"]),
        ("stages", ["fold_back_validation ", "scpp_second_positive ", "(asks the generator)"]),
        ("kinds", ["best_of_k ", "validate ", "(QuadItem)"]),
        ("executors", ["local ", "shard ", "ray "]),
        ("tables", ["scpp_table2 ", "bivlc_table2 ", "Table 2"]),
    ],
)
def test_list_the_registries(what: str, expected: list[str]) -> None:
    res = CliRunner().invoke(app, ["list", what])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert all(any(e in line for line in lines) for e in expected), res.output
    names = [line.split()[0] for line in lines]
    assert names == sorted(names) or what == "executors"

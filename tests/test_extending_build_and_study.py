"""The construction and study examples of docs/extending.md (a stage, a recipe, a study kind:
each one file and one registry line) run end to end, and the doc shows exactly their code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from builders.annotate_studies import make_study
from lexsem.annotate.kinds import KINDS, register_kind
from lexsem.cli import app
from lexsem.construct.catalog import RECIPES, STAGES
from lexsem.construct.recipe import load_recipe
from lexsem.errors import LexsemError

DOCS = Path(__file__).resolve().parents[1] / "docs"
EXAMPLES = DOCS / "examples"


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/examples importable; the registries restored after the test."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    for mod in ("shout_captions", "plausible"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    for registry in (STAGES, RECIPES, KINDS):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
        monkeypatch.setattr(registry, "_loaded", dict(registry._loaded))


@pytest.mark.parametrize("name", ["shout_captions.py", "shout.toml", "plausible.py"])
def test_the_doc_shows_the_example_files(name: str) -> None:
    assert (EXAMPLES / name).read_text() in (DOCS / "extending.md").read_text()


def test_a_new_stage_and_recipe_build_end_to_end(examples: None, tmp_path: Path) -> None:
    with pytest.raises(LexsemError, match=r"unknown stage 'shout_captions'"):
        load_recipe(EXAMPLES / "shout.toml")
    # the registry lines of docs/extending.md, parts 4 and 5
    STAGES.add("shout_captions", "shout_captions:STAGE")
    RECIPES.add("shout", EXAMPLES / "shout.toml")

    res = CliRunner().invoke(app, ["build", "shout", "-o", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.output
    rows = pq.read_table(tmp_path / "out" / "stages" / "01-shout_captions.parquet").to_pylist()
    assert [(r["source_id"], r["caption"], r["rejected"]) for r in rows] == [
        ("a", "A DOG CHASES A BALL.", None),
        ("b", "CATS.", "too short"),
        ("c", "TWO PEOPLE RIDE BIKES.", None),
    ]
    record = json.loads((tmp_path / "out" / "build.json").read_text())
    assert "shouted" in json.dumps(record) and "too short" in json.dumps(record)
    listed = CliRunner().invoke(app, ["list", "recipes"]).output
    assert "shout " in listed and "shout.toml" in listed
    assert "shout_captions" in CliRunner().invoke(app, ["list", "stages"]).output


def test_a_new_study_kind_makes_a_study(examples: None, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    import plausible

    register_kind(plausible.KIND)  # the registry line of docs/extending.md, part 6
    made = make_study(tmp_path, "-b", "synthetic/swap_att", "--sample", "2", "-k", "plausible")
    from lexsem.annotate.store import connect

    con = connect(made.path)
    units = [dict(r) for r in con.execute("SELECT kind, correct, payload FROM units")]
    con.close()
    assert len(units) == 2 and {(u["kind"], u["correct"]) for u in units} == {("plausible", "pos")}
    payload = json.loads(units[0]["payload"])
    assert [o["id"] for o in payload["options"]] == ["pos", "neg"]
    assert "plausible" in CliRunner().invoke(app, ["list", "kinds"]).output


def test_a_kind_that_is_not_registered_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, ["annotate", "create", str(tmp_path / "s.sqlite"), "-b", "synthetic", "-k", "pairs"]
    )
    assert res.exit_code != 0 and "--kind 'pairs' (did you mean 'pair'?)" in res.output

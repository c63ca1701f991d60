"""The construction and study examples of docs/extending.md (a stage and a study kind of the
example plugin package, a recipe: each one file and one registry line) run end to end, and the
doc shows exactly their code."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from builders.annotate_studies import make_study
from builders.example_plugin import ROOT, SOURCE, package_modules, registry_line
from lexsem.annotate.kinds import KINDS, register_kind
from lexsem.cli import app
from lexsem.construct.catalog import RECIPES, STAGES
from lexsem.construct.recipe import load_recipe
from lexsem.errors import LexsemError

DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The example plugin's modules importable one by one; the registries restored after the
    test."""
    for registry in (STAGES, RECIPES, KINDS):
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
        monkeypatch.setattr(registry, "_loaded", dict(registry._loaded))
    with package_modules():
        yield


@pytest.mark.parametrize(
    "path",
    [SOURCE / "shout.py", EXAMPLES / "shout.toml", SOURCE / "plausible.py"],
    ids=lambda path: path.name,
)
def test_the_doc_shows_the_example_files(path: Path) -> None:
    shown = f"# {path.relative_to(ROOT)}\n{path.read_text()}"
    assert shown in (DOCS / "extending.md").read_text()


def test_a_new_stage_and_recipe_build_end_to_end(examples: None, tmp_path: Path) -> None:
    with pytest.raises(LexsemError, match=r"unknown stage 'shout_captions'"):
        load_recipe(EXAMPLES / "shout.toml")
    # the registry lines of docs/extending.md, parts 4 and 5 (the first the example plugin's)
    exec(registry_line('STAGES.add("shout_captions", '), {"STAGES": STAGES})
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
    plausible = importlib.import_module("lexsem_example_plugin.plausible")
    # the registry line of docs/extending.md, part 6 (the example plugin's)
    exec(registry_line('KINDS.add("plausible", '), {"KINDS": KINDS})
    assert KINDS.get("plausible") is plausible.KIND
    KINDS.remove("plausible")
    register_kind(plausible.KIND)  # or registered as an object, the same kind
    assert KINDS.get("plausible") is plausible.KIND
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

"""Stage `freeze` (docs/building.md, "Freeze"): a build's accepted rows written as a benchmark
with its sha256s and data card, run by `lexsem eval -b build:DIR` and passed by
`lexsem validate`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.recipes import recipe_toml, stage, write_jsonl, write_recipe
from lexsem.benchmarks.load import load_benchmark
from lexsem.cli.app import app
from lexsem.errors import DataError

runner = CliRunner()

TRIPLETS = [
    {"p1": "a dog on a sofa", "p2": "a sofa with a dog on it", "n": "a sofa on a dog"},
    {"p1": "", "p2": "nothing", "n": "something"},  # rejected by caption_format
    {"p1": "two cats near a box", "p2": "a box near two cats", "n": "two boxes near a cat"},
    {"p1": "a man rides a horse", "p2": "a horse carries a man", "n": "a horse rides a man"},
]


def _recipe(**freeze: Any) -> str:
    """The recipe: caption_format on p1, then freeze (scpp format, with the given settings)."""
    settings = {"format": "scpp", "image": "image", "title": "Tiny triplets",
                "licences": {"triplets.jsonl": "CC0-1.0"},
                "notes": {"human validation": {"checked": 3, "kept": 3}}, **freeze}  # fmt: skip
    return recipe_toml("tiny-triplets", 7, stage("caption_format", name="format", column="p1"),
                       stage("freeze", **settings))  # fmt: skip


RECIPE = _recipe()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def built(tmp_path: Path) -> Path:
    write_recipe(tmp_path, RECIPE, TRIPLETS)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_freeze_writes_items_and_card(built: Path) -> None:
    folder = built / "benchmark"
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "all.json",
        "data",
        "data_card.json",
    ]
    items = json.loads((folder / "all.json").read_text())
    kept = [t for t in TRIPLETS if t["p1"]]
    assert [it["caption2"] for it in items] == [t["p2"] for t in kept]
    assert [it["negative_caption"] for it in items] == [t["n"] for t in kept]
    assert items[0]["caption"] == "A dog on a sofa."  # formatted by the stage before
    assert [it["source_id"] for it in items] == ["1", "3", "4"]  # JSON Lines line numbers
    assert all("filename" not in it for it in items)  # no image column: text-only items

    card = json.loads((folder / "data_card.json").read_text())
    assert card["files"] == [
        {"subset": "all", "file": "all.json", "sha256": _sha(folder / "all.json"), "items": 3}
    ]
    assert card["rows"] == {"in": 4, "frozen": 3, "left_out": {"empty caption": 1}}
    assert card["sources"] == [{"source": "triplets.jsonl", "items": 3, "licence": "CC0-1.0"}]
    assert card["notes"] == {"human validation": {"checked": 3, "kept": 3}}
    build = card["build"]
    assert build["input"]["sha256"] == _sha(built.parent / "triplets.jsonl")
    assert build["recipe"]["sha256"] == _sha(built.parent / "recipe.toml")
    assert build["seed"] == 7
    (fmt,) = build["stages"]  # the stages before freeze
    assert fmt["use"] == "caption_format" and fmt["settings"] == {"column": "p1"}
    assert (fmt["rows"], fmt["accepted"], fmt["rejected"]) == (4, 3, {"empty caption": 1})
    md = (folder / "README.md").read_text()
    assert "\n# Tiny triplets\n" in md and _sha(folder / "all.json") in md
    assert "| triplets.jsonl | 3 | CC0-1.0 |" in md and "empty caption: 1" in md

    record = json.loads((built / "build.json").read_text())
    last = record["stages"][-1]
    assert last["use"] == "freeze" and last["rows"] == 4 and last["accepted"] == 3
    assert last["counts"] == {"frozen": 3, "left out": 1}


def test_build_selector_eval_and_validate(built: Path, tmp_path: Path, minilm_path: Path) -> None:
    loaded = load_benchmark(f"build:{built}")
    assert loaded.spec.name == "build:build" and loaded.spec.origin == "user"
    assert [s.spec.name for s in loaded.subsets] == ["all"]
    assert [it.p2 for it in loaded.items] == [t["p2"] for t in TRIPLETS if t["p1"]]
    same = load_benchmark(f"scpp:{built / 'benchmark'}")  # the card is not a subset
    assert [s.spec.name for s in same.subsets] == ["all"]

    res = runner.invoke(app, ["validate", f"build:{built}"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "run"
    res = runner.invoke(
        app,
        ["eval", "-m", "minilm", "-b", f"build:{built}", "-o", str(run), "--n-boot", "10",
         "--device", "cpu"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    record = json.loads((run / "run.json").read_text())
    assert record["benchmarks"][0]["name"] == "build:build"
    results = [r for r in record["results"] if r["subset"] == "all"]
    assert results and all(r["n"] == 3 for r in results if "n" in r)


def test_changed_file_is_refused(built: Path) -> None:
    path = built / "benchmark" / "all.json"
    path.write_text(path.read_text().replace("dog", "cat"))
    with pytest.raises(DataError, match="changed after it was frozen"):
        load_benchmark(f"build:{built}")
    with pytest.raises(DataError, match="no frozen benchmark"):
        load_benchmark(f"build:{built / 'stages'}")


def test_rebuild_replaces_subsets_and_sugarcrepe_pairs(built: Path) -> None:
    recipe = built.parent / "recipe.toml"
    text = _recipe(format="sugarcrepe", subset="kind")
    rows = [{**t, "kind": "swap" if i % 2 else "replace"} for i, t in enumerate(TRIPLETS)]
    write_jsonl(built.parent / "triplets.jsonl", rows)
    recipe.write_text(text)
    res = runner.invoke(app, ["build", str(recipe), "-o", str(built)])
    assert res.exit_code == 0, res.output
    folder = built / "benchmark"
    assert sorted(p.name for p in folder.glob("*.json")) == [
        "data_card.json", "replace.json", "swap.json"
    ]  # fmt: skip
    pairs = json.loads((folder / "swap.json").read_text())
    assert list(pairs) == ["0"] and pairs["0"]["negative_caption"] == TRIPLETS[3]["n"]
    loaded = load_benchmark(f"build:{built}")
    assert {s.spec.name: len(s.items) for s in loaded.subsets} == {"replace": 2, "swap": 1}
    assert loaded.spec.item_kind == "pair"


def test_a_visla_freeze_is_scored_with_vislas_tasks(tmp_path: Path, minilm_path: Path) -> None:
    """Format `visla`: VISLA's tab-separated triplets, run by `-b build:DIR` as VISLA is (T2T,
    with P1-N and P2-N); a text-only build (no image column) needs no setting."""
    write_recipe(tmp_path, _recipe(format="visla", p2="p2"), TRIPLETS)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    lines = (out / "benchmark" / "all.tsv").read_text(encoding="utf-8").splitlines()
    kept = [t for t in TRIPLETS if t["p1"]]
    assert lines[0].split("\t") == ["caption", "second positive", "negative_caption", "source",
                                    "source_id"]  # fmt: skip
    assert [x.split("\t")[1:3] for x in lines[1:]] == [[t["p2"], t["n"]] for t in kept]
    loaded = load_benchmark(f"build:{out}")
    assert loaded.spec.text_tasks == ("t2t",) and loaded.spec.image_tasks == ("i2t",)
    assert [(it.p2, it.n, it.image) for it in loaded.items] == [
        (t["p2"], t["n"], None) for t in kept
    ]
    run = tmp_path / "run"
    res = runner.invoke(app, ["eval", "-m", "minilm", "-b", f"build:{out}", "-o", str(run),
                              "--n-boot", "0", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    metrics = {r["metric"] for r in json.loads((run / "run.json").read_text())["results"]}
    assert {"t2t", "p1n", "p2n"} <= metrics


def test_a_visla_freeze_refuses_a_text_with_a_tab(tmp_path: Path) -> None:
    rows = [*TRIPLETS[:1], {"p1": "a cat", "p2": "one\tcat", "n": "a dog"}]
    write_recipe(tmp_path, _recipe(format="visla", p2="p2"), rows)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "-q"])
    assert res.exit_code == 2
    assert "error: freeze: accepted row triplets.jsonl:2: 'one\\tcat' holds a tab or a line " \
        "break" in res.output  # fmt: skip
    assert not (out / "benchmark").exists()
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "-q",
                              "--set", "freeze.id=source_id"])  # fmt: skip
    assert res.exit_code == 2 and "format 'visla' numbers its items by row" in res.output

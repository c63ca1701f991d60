"""The shipped recipes trohn_text.toml and trohn_img.toml (BiVLC §5.1, §5.2): each loads with
the agreed stage names, and TROHN-Text runs from a COCO captions file to a training manifest.

The stages `sugarcrepe_negatives`, `template_filter`, `blind_scores`, `score_percentile`,
`clean_captions` and `generate_images` are written elsewhere: where one is not registered,
`_stand_ins` registers a stand-in that takes any settings, for the length of a test."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from builders.coco_captions_file import ANNOTATIONS, write_coco_captions
from lexsem.construct.catalog import STAGES
from lexsem.construct.recipe import load_recipe
from lexsem.construct.runner import build
from lexsem.construct.stage import Stage, StageContext, reject
from lexsem.images.image_store import ImageStore
from lexsem.train.manifest import read_manifest

AGREED = (
    "sugarcrepe_negatives",
    "template_filter",
    "blind_scores",
    "score_percentile",
    "clean_captions",
    "generate_images",
)
RECIPES = resources.files("lexsem.construct") / "recipes"


def _pass(rows: pa.Table, ctx: StageContext, **settings: Any) -> pa.Table:
    return rows


def _negatives(rows: pa.Table, ctx: StageContext, **settings: Any) -> pa.Table:
    """Two categories per caption: a swapped-word negative, and an answer that does not follow
    the template (None) for the second caption of each image."""
    out = []
    for n, row in enumerate(rows.to_pylist()):
        for category in ("replace_obj", "swap_att"):
            neg = row["caption"].replace("a ", "the ", 1) + f" ({category})"
            out.append(
                row
                | {
                    "source_id": f"{row['source_id']}-{category}",
                    "category": category,
                    "negative_caption": None if (n == 1 and category == "swap_att") else neg,
                }
            )
    return pa.Table.from_pylist(out)


def _template(rows: pa.Table, ctx: StageContext, **settings: Any) -> pa.Table:
    negs = rows["negative_caption"].to_pylist()
    return reject(rows, [None if n else "template not followed" for n in negs])


def _stand_in(monkeypatch: pytest.MonkeyPatch, stage: Stage) -> None:
    """`stage` registered under its name for this test (the registry's entry restored after)."""
    monkeypatch.setitem(STAGES._entries, stage.name, stage)


@pytest.fixture
def _stand_ins(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stand-ins for the agreed stages that are not registered: their names."""
    missing = [n for n in AGREED if n not in STAGES]
    for name in missing:
        _stand_in(monkeypatch, Stage(name, _pass))
    return missing


@pytest.mark.parametrize("name", ["trohn_text", "trohn_img"])
def test_the_recipes_load(name: str, _stand_ins: list[str], tmp_path: Path) -> None:
    captions = tmp_path / "captions_train2017.json"
    captions.write_text('{"annotations": []}', "utf-8")
    with resources.as_file(RECIPES / f"{name}.toml") as path:
        recipe = load_recipe(path, input=captions)
    uses = [s.use for s in recipe.stages]
    assert recipe.input.source == "coco_captions" and uses[-1] == "train_manifest"
    if name == "trohn_img":
        assert uses == [
            "sugarcrepe_negatives",
            "template_filter",  # unchanged negatives only: before the percentile, as BiVLC's
            "blind_scores",
            "score_percentile",
            "template_filter",  # the category's edit (lexsem's check)
            "clean_captions",  # checks only
            "adversarial_refine",
            "generate_images",
            "select_best_image",
            "clean_captions",  # formatting only, after the images (prompts as generated)
            "train_manifest",
        ]
        settings = [s.settings for s in recipe.stages]
        assert settings[1]["edit"] is False and "edit" not in settings[4]
        assert settings[5]["format"] is False and settings[9]["check"] is False
        assert recipe.stages[-1].settings["negative_image_column"] == "negative_image"
    else:
        assert uses == ["sugarcrepe_negatives", "template_filter", "train_manifest"]


def test_trohn_text_runs_from_coco_captions_to_a_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped recipe with its paths set, the generation stages stood in for (always, so
    the test needs no generator): one manifest row per (caption, negative), 80/20."""
    _stand_in(monkeypatch, Stage("sugarcrepe_negatives", _negatives))
    _stand_in(monkeypatch, Stage("template_filter", _template))
    coco = write_coco_captions(tmp_path / "coco")
    with resources.as_file(RECIPES / "trohn_text.toml") as path:
        recipe = load_recipe(path, input=coco,
                             sets=[f"input.images={tmp_path / 'coco' / 'train2017'}"])  # fmt: skip
    said: list[str] = []
    result = build(recipe, tmp_path / "b", echo=said.append)
    rows = result.stages[-1]
    assert rows.rows == 2 * len(ANNOTATIONS) and rows.rejected == {"template not followed": 1}
    assert rows.counts == {"train rows": 8, "dev rows": 3}
    manifest = read_manifest(
        tmp_path / "b" / "trohn_text.jsonl",
        ImageStore(coco_train2017=tmp_path / "coco" / "train2017"),
    )
    assert len(manifest.split("train")) == 8 and len(manifest.split("dev")) == 3
    assert all(len(ex.negatives) == 1 and ex.negative_image is None for ex in manifest.examples)
    record = json.loads((tmp_path / "b" / "trohn_text.json").read_text())
    assert record["sha256"] == manifest.sha256 and record["seed"] == 42

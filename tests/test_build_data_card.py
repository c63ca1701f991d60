"""A frozen build's data card (`lexsem.construct.data_card`) and Parquet files
(`lexsem.construct.dataset_files`): a Hugging Face dataset card whose YAML header
`datasets.load_dataset` reads, for the formats scpp, sugarcrepe and bivlc; every category the
rows name counted, zeros too; the generator's settings as the stage sent them; `-b build:DIR`
still runs the folder."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import datasets
import pytest
import yaml
from typer.testing import CliRunner

from builders.recipes import recipe_toml, stage, write_recipe
from builders.tiny_dual_models import write_clip
from lexsem.benchmarks.load import load_benchmark
from lexsem.cli.app import app
from lexsem.construct.data_card import _send_seed, card_markdown, generator_settings
from lexsem.digests import file_sha256

runner = CliRunner()

ROWS = [
    {"p1": "a dog on a sofa", "p2": "a sofa with a dog on it", "n": "a sofa on a dog",
     "cat": "swap_obj"},
    {"p1": "", "p2": "nothing", "n": "something", "cat": "add_att"},  # rejected: add_att is 0
    {"p1": "two cats near a box", "p2": "a box near two cats", "n": "two boxes near a cat",
     "cat": "swap_obj"},
    {"p1": "a man rides a horse", "p2": "a horse carries a man", "n": "a horse rides a man",
     "cat": "replace_rel"},
]  # fmt: skip


def _build(tmp_path: Path, rows: list[dict[str, str]] = ROWS, **freeze: Any) -> Path:
    settings = {"format": "scpp", "image": "image", "subset": "cat", "title": "Tiny triplets",
                "licences": {"triplets.jsonl": "CC0-1.0"}, **freeze}  # fmt: skip
    text = recipe_toml("tiny", 7, stage("caption_format", name="format", column="p1"),
                       stage("freeze", **settings))  # fmt: skip
    tmp_path.mkdir(parents=True, exist_ok=True)
    write_recipe(tmp_path, text, rows)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _sha12(out: Path, subset: str) -> str:
    """The digest in the name of `subset`'s Parquet file, checked against its bytes."""
    (path,) = (out / "benchmark" / "data").glob(f"{subset}-*.parquet")
    assert path.stem.rpartition("-")[2] == file_sha256(path)[:12]
    return path.stem.rpartition("-")[2]


def _header(md: str) -> dict[str, Any]:
    assert md.startswith("---\n")
    return yaml.safe_load(md.split("---\n", 2)[1])


def test_the_card_is_a_hugging_face_dataset_card(tmp_path: Path) -> None:
    out = _build(tmp_path)
    md = (out / "benchmark" / "README.md").read_text("utf-8")
    header = _header(md)
    assert header == {
        "license": "cc0-1.0",
        "pretty_name": "Tiny triplets",
        "task_categories": ["sentence-similarity"],  # text-only triplets
        "size_categories": ["n<1K"],
        "source_datasets": ["extended|triplets.jsonl"],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": "test", "path": [
                         f"data/replace_rel-{_sha12(out, 'replace_rel')}.parquet",
                         f"data/swap_obj-{_sha12(out, 'swap_obj')}.parquet"]}]}],
    }  # fmt: skip
    sections = [line[3:] for line in md.splitlines() if line.startswith("## ")]
    assert sections == [
        "Dataset description", "Loading", "Construction", "Items per category",
        "Rows left out", "Human steps", "Intended use", "Limitations",
        "Licences of the sources", "Citation", "Files",
    ]  # fmt: skip
    # every category the rows name, the one whose only row was rejected too
    assert "| add_att | 0 |\n| replace_rel | 1 |\n| swap_obj | 2 |" in md
    card = json.loads((out / "benchmark" / "data_card.json").read_text("utf-8"))
    assert card["categories"] == {"add_att": 0, "replace_rel": 1, "swap_obj": 2}
    assert "- SugarCrepe++ Dataset: Vision-Language Model Sensitivity" in md
    assert "None: no person checked these items in this build." in md
    name = f"swap_obj-{_sha12(out, 'swap_obj')}.parquet"
    (entry,) = [f for f in card["dataset_files"] if f["file"] == f"data/{name}"]
    assert entry["sha256"] == file_sha256(out / "benchmark" / "data" / name)


def test_the_card_names_the_input_file_not_where_it_lay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    out = _build(tmp_path / "work")
    card = json.loads((out / "benchmark" / "data_card.json").read_text("utf-8"))
    assert card["build"]["input"]["described"] == "triplets.jsonl"
    assert card["build"]["recipe"]["path"] == "~/work/recipe.toml"
    md = (out / "benchmark" / "README.md").read_text("utf-8")
    assert str(tmp_path) not in md and "from triplets.jsonl (4 rows)" in md
    assert _send_seed(card["build"]["recipe"]) is True  # the recipe still read through `~`
    assert json.loads((out / "build.json").read_text("utf-8"))["input"]["described"] == str(
        tmp_path / "work" / "triplets.jsonl"
    )  # the build's own record keeps where it read


def test_load_dataset_reads_a_scpp_build_and_eval_still_runs_it(tmp_path: Path) -> None:
    out = _build(tmp_path)
    ds = datasets.load_dataset(str(out / "benchmark"), cache_dir=str(tmp_path / "hf"))
    assert list(ds) == ["test"]
    test = ds["test"]
    assert test.column_names == ["id", "subset", "caption", "caption2", "negative_caption",
                                 "filename", "source", "source_id"]  # fmt: skip
    assert test["subset"] == ["replace_rel", "swap_obj", "swap_obj"]
    assert test["caption"] == ["A man rides a horse.", "A dog on a sofa.", "Two cats near a box."]
    assert test["caption2"][0] == "a horse carries a man"
    assert test["filename"] == [None, None, None]
    loaded = load_benchmark(f"build:{out}")
    assert sorted(s.spec.name for s in loaded.subsets) == ["replace_rel", "swap_obj"]
    assert len(loaded.items) == 3


def test_builds_loaded_into_one_cache_each_give_their_own_rows(tmp_path: Path) -> None:
    """`datasets` keys a local folder's cache by its name (`benchmark` for every build) and the
    card's `configs`: two builds, and one built again with other rows, read through one shared
    cache give each its own rows, scpp and bivlc alike."""
    cache = str(tmp_path / "hf")
    first = _build(tmp_path / "a")
    second = _build(tmp_path / "b", [{**r, "cat": "add_obj"} for r in ROWS])
    for out, subsets in ((first, ["replace_rel", "swap_obj", "swap_obj"]),
                         (second, ["add_obj"] * 3),
                         (first, ["replace_rel", "swap_obj", "swap_obj"])):  # fmt: skip
        test = datasets.load_dataset(str(out / "benchmark"), cache_dir=cache)["test"]
        assert test["subset"] == subsets
    # the first build made again from other rows, in the same folder
    rows = [{**r, "p1": r["p1"].replace("a ", "one ")} for r in ROWS]
    write_recipe(tmp_path / "a", (tmp_path / "a" / "recipe.toml").read_text("utf-8"), rows)
    res = runner.invoke(app, ["build", str(tmp_path / "a" / "recipe.toml"), "-o", str(first)])
    assert res.exit_code == 0, res.output
    test = datasets.load_dataset(str(first / "benchmark"), cache_dir=cache)["test"]
    assert test["caption"][0] == "One man rides one horse."
    quads = [_bivlc_build(tmp_path / f"q{k}", k) for k in (1, 2)]
    for k, out in zip((1, 2), quads, strict=True):
        test = datasets.load_dataset(str(out / "benchmark"), cache_dir=cache)["test"]
        assert test["caption"] == [f"A dog {k}0.", f"A dog {k}2."]
        assert len(load_benchmark(f"build:{out}").items) == 2


def test_load_dataset_reads_a_sugarcrepe_build(tmp_path: Path) -> None:
    images = [{**r, "image": f"coco/{i}.jpg"} for i, r in enumerate(ROWS)]
    text = recipe_toml("pairs", 1, stage("caption_format", name="format", column="p1"),
                       stage("freeze", format="sugarcrepe", subset="cat"))  # fmt: skip
    write_recipe(tmp_path, text, images)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    test = datasets.load_dataset(str(out / "benchmark"), cache_dir=str(tmp_path / "hf"))["test"]
    assert test.column_names == ["id", "subset", "caption", "negative_caption", "filename",
                                 "source", "source_id"]  # fmt: skip
    assert test["filename"] == ["coco/3.jpg", "coco/0.jpg", "coco/2.jpg"]  # references
    assert test.num_rows == 3
    header = _header((out / "benchmark" / "README.md").read_text("utf-8"))
    assert header["license"] == "unknown" and header["task_categories"] == ["image-to-text"]


def test_a_text_only_sugarcrepe_build_says_so_and_an_image_model_is_refused_at_once(
    tmp_path: Path,
) -> None:
    """SugarCrepe pairs without images: the card says text-only (`text-ranking`, the blind
    scorers); a dual encoder is refused in one line naming the missing images, before its
    weights are read (the folder given holds none)."""
    text = recipe_toml("pairs", 1, stage("caption_format", name="format", column="p1"),
                       stage("freeze", format="sugarcrepe", subset="cat"))  # fmt: skip
    write_recipe(tmp_path, text, ROWS)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    md = (out / "benchmark" / "README.md").read_text("utf-8")
    assert _header(md)["task_categories"] == ["text-ranking"]
    assert "SugarCrepe pairs without images" in md and "task `blind`" in md
    clip = write_clip(tmp_path / "clip")
    for weights in clip.glob("*.safetensors"):  # reading the weights would fail
        weights.unlink()
    res = runner.invoke(app, ["eval", "-m", f"clip:{clip}", "-b", f"build:{out}",
                              "-o", str(tmp_path / "run")])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert res.output == (
        "error: benchmark 'build:build' has no images (none of its items names one): pair "
        "scores captions against images; its captions alone are scored by a blind text scorer "
        "(task 'blind': -m gpt2, -m vera or -m cola)\n"
    )
    # text-only triplets: a dual encoder runs their text tasks, the image task left out
    triplets = _build(tmp_path / "scpp")
    clip = write_clip(tmp_path / "clip2")
    run = tmp_path / "run2"
    res = runner.invoke(app, ["eval", "-m", f"clip:{clip}", "-b", f"build:{triplets}",
                              "-o", str(run), "--n-boot", "10", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    record = json.loads((run / "run.json").read_text("utf-8"))
    assert {r["task"] for r in record["results"]} == {"tot"}
    res = runner.invoke(app, ["eval", "-m", f"clip:{clip}", "-b", f"build:{triplets}",
                              "-t", "itt", "-o", str(tmp_path / "run3")])  # fmt: skip
    assert res.exit_code == 2 and "has no images" in res.output


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 4), colour).save(buf, format="PNG")
    return buf.getvalue()


def _bivlc_build(tmp_path: Path, k: int = 0) -> Path:
    """A bivlc build of three quads (captions ``A dog {k}{i}.``), the second rejected."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (t, s) in enumerate([("swap", "obj"), ("add", "att"), ("swap", "obj")]):
        for name, colour in (("pos", (i, k, 0)), ("neg", (0, i, k))):
            (tmp_path / f"{name}{i}.png").write_bytes(_png(colour))
        rows.append({"image": str(tmp_path / f"pos{i}.png"), "caption": f"A dog {k or ''}{i}.",
                     "negative_caption": f"A cat {i}.",
                     "negative_image": str(tmp_path / f"neg{i}.png"), "type": t,
                     "subtype": s})  # fmt: skip
    rows[1]["caption"] = ""  # rejected below: add_att keeps no item
    text = recipe_toml("quads", 1, stage("caption_format", name="format", column="caption"),
                       stage("freeze", format="bivlc", p1="caption", n="negative_caption",
                             licences={"triplets.jsonl": "CC-BY-4.0"}))  # fmt: skip
    write_recipe(tmp_path, text, rows)
    out = tmp_path / "build"
    res = runner.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_load_dataset_reads_a_bivlc_build_with_its_images(tmp_path: Path) -> None:
    out = _bivlc_build(tmp_path)
    assert not (out / "benchmark" / "data").exists()  # test.parquet is read as it is
    test = datasets.load_dataset(str(out / "benchmark"), cache_dir=str(tmp_path / "hf"))["test"]
    assert test.num_rows == 2
    assert test.features["image"] == datasets.Image()
    assert test[0]["image"].size == (4, 4) and test["caption"] == ["A dog 0.", "A dog 2."]
    md = (out / "benchmark" / "README.md").read_text("utf-8")
    header = _header(md)
    assert header["license"] == "cc-by-4.0"
    assert header["task_categories"] == ["image-to-text", "text-to-image"]
    assert header["configs"][0]["data_files"] == [{"split": "test", "path": "test.parquet"}]
    sha = file_sha256(out / "benchmark" / "test.parquet")
    assert header["configs"][0]["description"] == f"test.parquet sha256 {sha}"
    assert "| add_att | 0 |\n| swap_obj | 2 |" in md
    assert len(load_benchmark(f"build:{out}").items) == 2


def test_generator_settings_are_those_the_stage_sent(tmp_path: Path) -> None:
    """The generator's fingerprint says its default max_tokens (64); the stage sent its
    `params` (350): the card says 350, and the seed only when the recipe sends it."""
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "r"\nseed = 3\nsend_seed = false\n', encoding="utf-8")
    fingerprint = {"backend": "openai", "model": "m", "max_tokens": 64, "temperature": 0.0}
    card: dict[str, Any] = {
        "build": {
            "recipe": {"name": "r", "path": str(recipe), "sha256": file_sha256(recipe)},
            "model": {"spec": "openai:m", "fingerprint": fingerprint},
            "seed": 3,
            "stages": [
                {"name": "negatives", "use": "sugarcrepe_negatives",
                 "settings": {"params": {"max_tokens": 350}}},
                {"name": "format", "use": "caption_format", "settings": {}},
            ],
        }
    }  # fmt: skip
    assert generator_settings(card) == [
        {"stage": "negatives", "sent": {"max_tokens": 350, "temperature": 0.0},
         "seed_sent": False}
    ]  # fmt: skip
    recipe.write_text('name = "r"\nseed = 3\n', encoding="utf-8")  # changed: sha256 differs
    (unknown,) = generator_settings(card)
    assert unknown["seed_sent"] is None
    card["build"]["recipe"]["sha256"] = file_sha256(recipe)
    (sent,) = generator_settings(card)
    assert sent["sent"] == {"max_tokens": 350, "temperature": 0.0, "seed": 3}
    full = {"title": "t", "format": "sugarcrepe", "lexsem_version": "0", "seed": 3,
            "files": [], "rows": {"in": 1, "frozen": 1, "left_out": {}}, "notes": {},
            "sources": [{"source": "s", "items": 1, "licence": None}], **card}  # fmt: skip
    md = card_markdown(full)
    assert '| negatives | `{"max_tokens": 350, "temperature": 0.0, "seed": 3}` |' in md

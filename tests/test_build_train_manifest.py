"""Stage `train_manifest` (`lexsem.construct.train_manifest`): BiVLC's 80/20 split (`datasets`'
``train_test_split(test_size=0.2, seed=42)``, its fine-tuning script's) written as a training
manifest that `lexsem train` reads; a build from COCO captions to a TROHN-Img manifest and one
training step on a tiny open_clip."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest

from builders.coco_captions_file import write_coco_captions
from lexsem.construct.catalog import register_stage
from lexsem.construct.stage import StageContext, accepted
from lexsem.construct.train_manifest import train_manifest
from lexsem.errors import DataError
from lexsem.images.image_store import ImageStore
from lexsem.train.manifest import read_manifest


def _rows(n: int, rejected: dict[int, str] | None = None) -> pa.Table:
    rejected = rejected or {}
    return pa.table(
        {
            "source": ["coco"] * n,
            "source_id": [str(i) for i in range(n)],
            "image": [f"train2017:{i % 7:012d}.jpg" for i in range(n)],
            "caption": [f"A dog number {i}." for i in range(n)],
            "negative_caption": [f"A cat number {i}." for i in range(n)],
            "rejected": pa.array([rejected.get(i) for i in range(n)], pa.string()),
        }
    )


def test_the_split_is_datasets_train_test_split(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = _rows(23, {4: "template", 17: "refined"})
    rows = rows.set_column(
        3,
        "caption",
        pa.array(
            [c if i != 9 else "A cat number 9." for i, c in enumerate(rows["caption"].to_pylist())]
        ),
    )  # row 9: negative equals caption
    ctx = StageContext(tmp_path)
    out = train_manifest(rows, ctx).to_pylist()
    usable = [r for r in rows.to_pylist() if r["rejected"] is None and r["source_id"] != "9"]
    ref = datasets.Dataset.from_list(usable).train_test_split(test_size=0.2, seed=42)
    manifest = [json.loads(line) for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    want = [
        (r["image"], r["caption"], [r["negative_caption"]], split)
        for split, part in (("train", ref["train"]), ("dev", ref["test"]))
        for r in part
    ]
    assert [(m["image"], m["caption"], m["negatives"], m["split"]) for m in manifest] == want
    by_id = {r["source_id"]: r for r in out}
    assert by_id["9"]["rejected"] == "negative equals caption" and by_id["9"]["split"] is None
    assert by_id["4"]["rejected"] == "template" and by_id["4"]["split"] is None
    assert sum(r["split"] == "dev" for r in out) == len(ref["test"]) == 4
    assert ctx.counts["train rows"] == 16 and ctx.counts["dev rows"] == 4
    record = json.loads((tmp_path / "manifest.json").read_text())
    digest = hashlib.sha256((tmp_path / "manifest.jsonl").read_bytes()).hexdigest()
    assert record["sha256"] == digest and record["splits"] == {"train": 16, "dev": 4}
    assert "--preset bivlc-trohn-text" in record["train"]
    other = train_manifest(rows, StageContext(tmp_path / "s7"), seed=7, format="parquet")
    ref7 = datasets.Dataset.from_list(usable).train_test_split(test_size=0.2, seed=7)
    dev7 = {r["source_id"] for r in other.to_pylist() if r["split"] == "dev"}
    assert dev7 == {r["source_id"] for r in ref7["test"]}


def test_bad_settings_and_rows(tmp_path: Path) -> None:
    ctx = StageContext(tmp_path)
    with pytest.raises(DataError, match="no column 'neg'"):
        train_manifest(_rows(4), ctx, negative_column="neg")
    with pytest.raises(DataError, match="val_fraction must be"):
        train_manifest(_rows(4), ctx, val_fraction=1.0)
    with pytest.raises(DataError, match="format must be"):
        train_manifest(_rows(4), ctx, format="csv")
    with pytest.raises(DataError, match="1 usable row"):
        train_manifest(_rows(2, {0: "x"}), ctx)
    rows = _rows(3).append_column("negative_image", pa.array([None, "files/a.png", "../b.png"]))
    with pytest.raises(DataError, match=r"item 1: negative image 'files/a\.png' is not"):
        train_manifest(rows, ctx, negative_image_column="negative_image")
    with pytest.raises(DataError, match=r"item 2: negative image '\.\./b.png'"):
        train_manifest(rows.slice(2), ctx, negative_image_column="negative_image")


def fake_generate(rows: pa.Table, ctx: StageContext, k: int = 2) -> pa.Table:
    """A stand-in for `generate_images` and the negatives: a negative caption per row and k
    small images under the build folder (a list column of relative paths)."""
    from PIL import Image

    negs, lists = [], []
    for n, (ok, sid, cap) in enumerate(
        zip(
            accepted(rows).to_pylist(),
            rows["source_id"].to_pylist(),
            rows["caption"].to_pylist(),
            strict=True,
        )
    ):
        negs.append(cap.replace("dog", "cat").replace("a ", "one ", 1) + " (negative)")
        paths = []
        for j in range(k if ok else 0):
            rel = f"files/images/{sid}_{j}.png"
            (ctx.out / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (40, 40), ((50 * n) % 256, 80 * j, 120)).save(ctx.out / rel)
            paths.append(rel)
        lists.append(paths)
    rows = rows.append_column("negative_caption", pa.array(negs, pa.string()))
    return rows.append_column("images", pa.array(lists, pa.list_(pa.string())))


register_stage("test_fake_generate", fake_generate, replace=True)


@pytest.mark.torch
def test_a_trohn_img_build_trains_one_step(tmp_path: Path) -> None:
    """COCO captions -> negatives and images (a stand-in) -> select_best_image ->
    train_manifest, run by the recipe runner; the manifest passes `read_manifest` with its
    images and trains one step of the trohn_img regime on a tiny open_clip."""
    from builders.backends import require_module
    from builders.tiny_dual_models import write_tiny_openclip
    from lexsem.construct.runner import build
    from lexsem.train.config import TrainConfig
    from lexsem.train.loop import Trainer

    require_module("open_clip")
    coco = write_coco_captions(tmp_path / "coco")
    images = tmp_path / "coco" / "train2017"
    recipe = tmp_path / "trohn.toml"
    recipe.write_text(
        'name = "tiny-trohn-img"\n[input]\nsource = "coco_captions"\n[input.settings]\n'
        f'path = "{coco}"\nimages = "{images}"\n'
        '[[stages]]\nuse = "test_fake_generate"\n'
        '[[stages]]\nuse = "select_best_image"\n'
        '[[stages]]\nuse = "train_manifest"\n[stages.settings]\nname = "trohn_img"\n'
        'negative_image_column = "negative_image"\n'
    )
    said: list[str] = []
    result = build(recipe, tmp_path / "b", echo=said.append)
    out = tmp_path / "b"
    record = json.loads((out / "trohn_img.json").read_text())
    assert record["sha256"] == hashlib.sha256((out / "trohn_img.jsonl").read_bytes()).hexdigest()
    assert f"--coco-train2017 {images}" in record["train"] and "bivlc-trohn-img" in record["train"]
    stage = result.stages[-1]
    assert stage.counts == {"train rows": 4, "dev rows": 2}
    manifest = read_manifest(out / "trohn_img.jsonl", ImageStore(coco_train2017=images))
    assert manifest.describe()["negative_images"] == 6 and manifest.images_sha256
    ex = manifest.examples[0]
    assert ex.negative_image is not None and ex.negative_image.startswith("manifest:files/images/")
    assert ex.negative_image.endswith("_0.png") and ex.negative_image_caption.endswith("(negative)")
    spec = write_tiny_openclip(tmp_path / "clip", "tiny-trohn-build")
    cfg = TrainConfig(
        model=spec,
        manifest=out / "trohn_img.jsonl",
        out=tmp_path / "run",
        regime="trohn_img",
        epochs=1,
        batch_size=2,
        max_steps=1,
        lr=1e-3,
        warmup=1,
        device="cpu",
        n_boot=0,
        coco_train2017=images,
        cache_dir=tmp_path / "cache",
    )
    res = Trainer(cfg).run()
    assert res.steps == 1
    train = json.loads((tmp_path / "run" / "train.json").read_text())
    assert train["data"]["sha256"] == record["sha256"]
    assert train["data"]["manifest"]["negative_images"] == 6

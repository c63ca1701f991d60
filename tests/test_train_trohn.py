"""TROHN-Text and TROHN-Img (BiVLC, §5) as training manifests: tiny `datasets` objects with the
published columns, converted, read back with `read_manifest`, in every source form (objects,
a save_to_disk folder, parquet files as on the Hub); the refusals name the place and the row."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from builders.backends import require_module
from lexsem.errors import DataError
from lexsem.images.image_store import ImageStore
from lexsem.train.manifest import read_manifest
from lexsem.train.trohn import trohn_img_manifest, trohn_text_manifest

pytestmark = pytest.mark.torch

datasets = require_module("datasets")
Image = require_module("PIL.Image")

COCO = ["000000000009.jpg", "000000000025.jpg", "000000391979.jpg"]
TEXT_TRAIN = {
    "image_id": [COCO[0], COCO[0], COCO[1]],
    "caption": ["A man riding a horse.", "A man riding a horse.", "A giraffe  by a tree."],
    "negative_caption": ["A horse riding a man.", "A man riding a cow.", "A tree by a giraffe."],
}
TEXT_VALIDATION = {
    "image_id": [COCO[2]],
    "caption": ["A bird is flying over the water of a beach."],
    "negative_caption": ["A bird is flying over the snow of a mountain."],
}


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (8, 6)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def _pil(colour: tuple[int, int, int]) -> Any:
    return Image.new("RGB", (8, 6), colour)


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    """An image store whose COCO train2017 folder has the images the rows name."""
    coco = tmp_path / "coco-train2017"
    coco.mkdir()
    for i, name in enumerate(COCO):
        (coco / name).write_bytes(_png((i * 40, 0, 0)))
    return ImageStore(image_root=tmp_path / "no-images", coco_train2017=coco)


def _text_dict(**train_overrides: list) -> Any:
    return datasets.DatasetDict(
        train=datasets.Dataset.from_dict({**TEXT_TRAIN, **train_overrides}),
        validation=datasets.Dataset.from_dict(TEXT_VALIDATION),
    )


def _img_dict(train_negatives: list | None = None) -> Any:
    train = {
        "image_id": [COCO[0], COCO[1]],
        "caption": ["A man riding a horse.", "A giraffe by a tree."],
        "negative_caption": ["A horse riding a man.", "A tree by a giraffe."],
        "negative_image": train_negatives or [_pil((0, 200, 0)), _pil((0, 0, 200))],
    }
    validation = {
        "image_id": [COCO[2]],
        "caption": ["A bird over the water."],
        "negative_caption": ["A bird over the snow."],
        "negative_image": [_pil((250, 250, 0))],
    }
    features = datasets.Features(
        {
            "image_id": datasets.Value("string"),
            "caption": datasets.Value("string"),
            "negative_caption": datasets.Value("string"),
            "negative_image": datasets.Image(),
        }
    )
    return datasets.DatasetDict(
        train=datasets.Dataset.from_dict(train, features=features),
        validation=datasets.Dataset.from_dict(validation, features=features),
    )


def _rows(manifest: Any) -> list[tuple]:
    return [(ex.image, ex.caption, ex.negatives, ex.split) for ex in manifest.examples]


TEXT_ROWS = [
    ("train2017:000000000009.jpg", "A man riding a horse.", ("A horse riding a man.",), "train"),
    ("train2017:000000000009.jpg", "A man riding a horse.", ("A man riding a cow.",), "train"),
    ("train2017:000000000025.jpg", "A giraffe by a tree.", ("A tree by a giraffe.",), "train"),
    (
        "train2017:000000391979.jpg",
        "A bird is flying over the water of a beach.",
        ("A bird is flying over the snow of a mountain.",),
        "dev",
    ),
]


# --- TROHN-Text ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["m.jsonl", "m.parquet"])
def test_trohn_text_rows_and_splits(tmp_path: Path, store: ImageStore, name: str) -> None:
    out = tmp_path / "out" / name
    out.parent.mkdir()
    summary = trohn_text_manifest(_text_dict(), out)
    assert summary["rows"] == 4 and summary["splits"] == {"train": 3, "dev": 1}
    assert summary["source_rows"] == {"train": 3, "validation": 1}
    assert summary["images"] == 3 and summary["images_written"] == 0 and summary["skipped"] == 0
    manifest = read_manifest(out, store)  # every COCO reference resolves
    assert _rows(manifest) == TEXT_ROWS
    assert all(ex.negative_image is None for ex in manifest.examples)


def test_trohn_text_from_disk_and_parquet_as_on_the_hub(tmp_path: Path, store: ImageStore) -> None:
    saved = tmp_path / "saved"
    _text_dict().save_to_disk(str(saved))
    hub = tmp_path / "hub"
    (hub / "data").mkdir(parents=True)
    for split, ds in _text_dict().items():
        ds.to_parquet(str(hub / "data" / f"{split}-00000-of-00001.parquet"))
    converted = tmp_path / "converted" / "default"  # the Hub's refs/convert/parquet layout
    for split, ds in _text_dict().items():
        (converted / split).mkdir(parents=True)
        ds.to_parquet(str(converted / split / "0000.parquet"))
    for i, source in enumerate([saved, str(hub), converted.parent]):
        out = tmp_path / f"m{i}.jsonl"
        trohn_text_manifest(source, out)
        assert _rows(read_manifest(out, store)) == TEXT_ROWS
    one = tmp_path / "one.jsonl"
    trohn_text_manifest(hub / "data" / "validation-00000-of-00001.parquet", one)
    assert _rows(read_manifest(one, store)) == TEXT_ROWS[3:]


def test_trohn_text_numeric_ids_single_dataset_limit_and_split_map(
    tmp_path: Path, store: ImageStore
) -> None:
    ds = datasets.Dataset.from_dict({**TEXT_TRAIN, "image_id": ["9", "9", "25"]})
    out = tmp_path / "m.jsonl"
    trohn_text_manifest(ds, out)  # no split recorded: train
    assert _rows(read_manifest(out, store)) == TEXT_ROWS[:3]
    ints = datasets.Dataset.from_dict({**TEXT_VALIDATION, "image_id": [391979]})
    trohn_text_manifest(ints, out, split_map={"train": "dev"})
    assert _rows(read_manifest(out, store)) == TEXT_ROWS[3:]
    # limit: the first rows of each source split; None leaves a split out
    summary = trohn_text_manifest(_text_dict(), out, limit=1)
    assert summary["source_rows"] == {"train": 1, "validation": 1}
    assert _rows(read_manifest(out, store)) == [TEXT_ROWS[0], TEXT_ROWS[3]]
    trohn_text_manifest(_text_dict(), out, split_map={"train": "train", "validation": None})
    assert _rows(read_manifest(out, store)) == TEXT_ROWS[:3]
    # a list cell gives several negatives
    many = datasets.Dataset.from_dict(
        {**TEXT_VALIDATION, "negative_caption": [["A bird over snow.", "A fish over water."]]}
    )
    trohn_text_manifest(many, out)
    assert read_manifest(out, store).examples[0].negatives == (
        "A bird over snow.",
        "A fish over water.",
    )


def test_trohn_text_custom_column_names(tmp_path: Path, store: ImageStore) -> None:
    renamed = datasets.Dataset.from_dict(
        {
            "file": TEXT_TRAIN["image_id"],
            "text": TEXT_TRAIN["caption"],
            "neg": TEXT_TRAIN["negative_caption"],
        }
    )
    out = tmp_path / "m.jsonl"
    trohn_text_manifest(
        renamed, out, image_column="file", caption_column="text", negative_column="neg"
    )
    assert _rows(read_manifest(out, store)) == TEXT_ROWS[:3]


@pytest.mark.parametrize(
    ("negatives", "message"),
    [
        ([None, "A man riding a cow.", "x"], r"split 'train', item row 0: the row has no negative"),
        (["x", "  ", "y"], r"item row 1: column 'negative_caption' is empty"),
        (["x", "y", "A giraffe by a tree."], r"item row 2: the negative caption is the caption"),
    ],
)
def test_trohn_text_bad_rows_are_named(tmp_path: Path, negatives: list, message: str) -> None:
    out = tmp_path / "m.jsonl"
    with pytest.raises(DataError, match=message):
        trohn_text_manifest(_text_dict(negative_caption=negatives), out)
    assert not out.exists()
    summary = trohn_text_manifest(_text_dict(negative_caption=negatives), out, skip_invalid=True)
    assert summary["rows"] == 3 and summary["skipped"] == 1
    assert "row" in summary["skipped_first"][0]


def test_a_bad_row_in_a_parquet_file_names_the_file_and_row(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    bad = {**TEXT_TRAIN, "image_id": [COCO[0], "../escape.jpg", COCO[1]]}
    datasets.Dataset.from_dict(bad).to_parquet(str(data / "train-00000-of-00001.parquet"))
    with pytest.raises(DataError, match=r"train-00000-of-00001\.parquet, item row 1: .*'\.\.'"):
        trohn_text_manifest(tmp_path, tmp_path / "m.jsonl")


def test_wrong_columns_and_splits_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    wrong = datasets.Dataset.from_dict({"image": ["a.jpg"], "caption": ["c"], "negative": ["n"]})
    with pytest.raises(
        DataError,
        match=r"missing column\(s\) 'image_id' \(image_column\), "
        r"'negative_caption' \(negative_column\); the columns are: image, "
        r"caption, negative",
    ):
        trohn_text_manifest(wrong, out)
    # TROHN-Text has no negative image column
    with pytest.raises(DataError, match=r"'negative_image' \(negative_image_column\)"):
        trohn_img_manifest(_text_dict(), out)
    test_split = datasets.DatasetDict(test=datasets.Dataset.from_dict(TEXT_VALIDATION))
    with pytest.raises(DataError, match=r"source split 'test' is not in split_map"):
        trohn_text_manifest(test_split, out)
    escape = datasets.DatasetDict({"../up": datasets.Dataset.from_dict(TEXT_VALIDATION)})
    with pytest.raises(DataError, match=r"unusable split name '\.\./up'"):
        trohn_text_manifest(escape, out, split_map={"../up": "train"})
    with pytest.raises(DataError, match="leaves out every split"):
        trohn_text_manifest(_text_dict(), out, split_map={"train": None, "validation": None})
    with pytest.raises(ValueError, match="a manifest split is one of"):
        trohn_text_manifest(_text_dict(), out, split_map={"train": "test"})
    with pytest.raises(DataError, match="no dataset here"):
        trohn_text_manifest(tmp_path / "nothing", out)
    with pytest.raises(DataError, match="unknown manifest format"):
        trohn_text_manifest(_text_dict(), tmp_path / "m.csv")
    with pytest.raises(ValueError, match="images_root"):
        trohn_text_manifest(_text_dict(), out, images_root="Train 2017")
    with pytest.raises(TypeError, match=r"datasets\.Dataset"):
        trohn_text_manifest([{"image_id": "x"}], out)
    assert not out.exists()


# --- TROHN-Img -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["m.jsonl", "m.parquet"])
def test_trohn_img_writes_the_negative_images(tmp_path: Path, store: ImageStore, name: str) -> None:
    out = tmp_path / "out" / name
    out.parent.mkdir()
    summary = trohn_img_manifest(_img_dict(), out)
    assert summary["rows"] == 3 and summary["splits"] == {"train": 2, "dev": 1}
    assert summary["images_written"] == 3
    manifest = read_manifest(out, store)
    assert [
        (ex.image, ex.caption, ex.negatives, ex.negative_image, ex.negative_image_caption, ex.split)
        for ex in manifest.examples
    ] == [
        (
            "train2017:000000000009.jpg",
            "A man riding a horse.",
            (),
            "manifest:images/train/000000-neg.png",
            "A horse riding a man.",
            "train",
        ),
        (
            "train2017:000000000025.jpg",
            "A giraffe by a tree.",
            (),
            "manifest:images/train/000001-neg.png",
            "A tree by a giraffe.",
            "train",
        ),
        (
            "train2017:000000391979.jpg",
            "A bird over the water.",
            (),
            "manifest:images/validation/000000-neg.png",
            "A bird over the snow.",
            "dev",
        ),
    ]
    written = Image.open(out.parent / "images" / "validation" / "000000-neg.png")
    assert written.getpixel((0, 0)) == (250, 250, 0) and written.size == (8, 6)


def test_trohn_img_from_parquet_keeps_the_image_format(tmp_path: Path, store: ImageStore) -> None:
    jpeg = io.BytesIO()
    Image.new("RGB", (16, 16), (0, 128, 255)).save(jpeg, format="JPEG")
    cells = [{"bytes": jpeg.getvalue(), "path": None}, _pil((1, 2, 3))]
    hub = tmp_path / "hub" / "data"
    hub.mkdir(parents=True)
    for split, ds in _img_dict(cells).items():
        ds.to_parquet(str(hub / f"{split}-00000-of-00001.parquet"))
    out = tmp_path / "out" / "m.jsonl"
    out.parent.mkdir()
    trohn_img_manifest(tmp_path / "hub", out, limit=1)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["negative_image"] for r in rows] == [
        "manifest:images/train/000000-neg.jpg",
        "manifest:images/validation/000000-neg.png",
    ]
    assert (out.parent / "images/train/000000-neg.jpg").read_bytes() == jpeg.getvalue()
    assert len(read_manifest(out, store).examples) == 2


def test_an_embedded_positive_image_is_written_too(tmp_path: Path, store: ImageStore) -> None:
    """A copy whose image column holds the image itself (as BiVLC's evaluation set does)."""
    features = _img_dict()["train"].features.copy()
    features["image_id"] = datasets.Image()
    row = {"caption": ["a"], "negative_caption": ["b"], "negative_image": [_pil((0, 9, 0))]}
    ds = datasets.Dataset.from_dict({**row, "image_id": [_pil((9, 9, 9))]}, features=features)
    out = tmp_path / "m.jsonl"
    assert trohn_img_manifest(ds, out)["images_written"] == 2
    (ex,) = read_manifest(out, store).examples
    assert ex.image == "manifest:images/train/000000.png"
    assert ex.negative_image == "manifest:images/train/000000-neg.png"
    assert Image.open(tmp_path / "images/train/000000.png").getpixel((0, 0)) == (9, 9, 9)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ([_pil((0, 1, 0)), None], r"split 'train', item row 1: the row has no negative image"),
        (
            [{"bytes": None, "path": "/elsewhere/neg.png"}, _pil((0, 1, 0))],
            r"item row 0: column 'negative_image' holds only the path '/elsewhere/neg.png'",
        ),
    ],
)
def test_trohn_img_bad_rows_are_named(tmp_path: Path, cells: list, message: str) -> None:
    with pytest.raises(DataError, match=message):
        trohn_img_manifest(_img_dict(cells), tmp_path / "m.jsonl")


def test_trohn_img_undecodable_image_is_named(tmp_path: Path) -> None:
    ds = datasets.Dataset.from_dict(
        {
            "image_id": [COCO[0]],
            "caption": ["a"],
            "negative_caption": ["b"],
            "negative_image": [b"not an image"],
        }
    )
    with pytest.raises(DataError, match=r"row 0: column 'negative_image' is not a readable image"):
        trohn_img_manifest(ds, tmp_path / "m.jsonl")
    summary = trohn_img_manifest(
        datasets.concatenate_datasets([ds, ds.map(lambda r: {"negative_image": _png((1, 1, 1))})]),
        tmp_path / "m.jsonl",
        skip_invalid=True,
    )
    assert summary["rows"] == 1 and summary["skipped"] == 1


def test_a_hub_id_is_loaded_with_datasets_and_offline_says_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`imirandam/TROHN-Text` goes to `datasets.load_dataset` (the Hub; here offline, so a
    clear error says to give a local copy instead)."""
    import datasets

    from lexsem.errors import DataError
    from lexsem.train import trohn

    asked: list[str] = []

    def offline(repo: str, *a: object, **k: object) -> None:
        asked.append(repo)
        raise ConnectionError("the Hub is unreachable")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError, match="save_to_disk"):
        trohn.trohn_text_manifest("imirandam/TROHN-Text", tmp_path / "m.jsonl")
    assert asked == ["imirandam/TROHN-Text"]

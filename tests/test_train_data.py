"""Training data: the manifest (round trips, every refusal names file and row, image
references resolved as evaluation resolves them), NegCLIP's swap negatives ("When and why
vision-language models behave like bags-of-words, and what to do about it?", §4), COCO captions
to a manifest, and rendered scenes disjoint from the synthetic benchmarks."""

from __future__ import annotations

import hashlib
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from lexsem.benchmarks.load import load_benchmark
from lexsem.errors import DataError, LexsemError
from lexsem.images.image_store import ImageStore
from lexsem.train.manifest import Example, read_manifest, write_manifest
from lexsem.train.rendered import (
    evaluation_scenes,
    rendered_examples,
    scene_pool,
    write_rendered,
)
from lexsem.train.swaps import (
    LexiconTagger,
    coco_captions_manifest,
    swap_candidates,
    swap_negatives,
    tokenize,
)


def _png(size: tuple[int, int] = (8, 8), colour: tuple[int, int, int] = (200, 10, 10)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A manifest folder with two images under images/."""
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(_png())
    (tmp_path / "images" / "b.png").write_bytes(_png(colour=(10, 10, 200)))
    return tmp_path


def _store(tmp_path: Path, **kw: Any) -> ImageStore:
    return ImageStore(image_root=tmp_path / "no-images", **kw)


EXAMPLES = [
    Example("manifest:images/a.png", "a red square", ("a blue square",)),
    Example(
        "manifest:images/a.png",
        "a red thing",
        (),
        negative_image="manifest:images/b.png",
        negative_image_caption="a blue thing",
    ),
    Example(
        "manifest:images/b.png", "a blue square", ("a red square", "a blue circle"), split="dev"
    ),
]


# --- manifest ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["m.jsonl", "m.parquet"])
def test_manifest_round_trip(folder: Path, name: str) -> None:
    path = write_manifest(folder / name, EXAMPLES)
    manifest = read_manifest(path, _store(folder))
    assert list(manifest.examples) == EXAMPLES
    assert manifest.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert manifest.format == name.split(".")[1]
    assert [e.caption for e in manifest.split("dev")] == ["a blue square"]
    assert len(manifest.split("train")) == 2
    assert manifest.describe()["splits"] == {"train": 2, "dev": 1}
    assert manifest.describe()["negative_images"] == 1
    with pytest.raises(ValueError, match="unknown split 'test'"):
        manifest.split("test")


def test_manifest_rows_and_defaults(folder: Path) -> None:
    path = folder / "m.jsonl"
    path.write_text(
        '{"image": "manifest:images/a.png", "caption": "x"}\n'
        "\n"
        '{"image": "manifest:images/b.png", "caption": "y", "negatives": null, "split": null}\n',
        encoding="utf-8",
    )
    manifest = read_manifest(path, _store(folder))
    assert [(e.row, e.split, e.negatives) for e in manifest.examples] == [
        (1, "train", ()),
        (3, "train", ()),
    ]
    assert manifest.where(manifest.examples[1]) == f"{path}:3"


GOOD = {"image": "manifest:images/a.png", "caption": "a red square"}

BAD_ROWS: list[tuple[Any, str]] = [
    ({"caption": "x"}, "missing field 'image'"),
    ({"image": "manifest:images/a.png"}, "missing field 'caption'"),
    ({**GOOD, "caption": 3}, "field 'caption' must be a string, got int"),
    ({**GOOD, "caption": None}, "field 'caption' must be a string, got null"),
    ({**GOOD, "caption": "  "}, "field 'caption' is empty"),
    ({**GOOD, "image": ""}, "field 'image' is empty"),
    ({**GOOD, "split": "test"}, "unknown split 'test'"),
    ({**GOOD, "captions": "x"}, "unknown field(s) 'captions'"),
    ({**GOOD, "negatives": "x"}, "field 'negatives' must be a list of strings, got str"),
    ({**GOOD, "negatives": ["x", 2]}, "negative 1 must be a string, got int"),
    ({**GOOD, "negatives": [""]}, "negative 0 is empty"),
    ({**GOOD, "negatives": ["a red square"]}, "negative 0 is the caption itself"),
    ({**GOOD, "negatives": ["x", "x"]}, "negative 1 repeats negative 0"),
    ({**GOOD, "negative_image": "manifest:images/b.png"}, "given without 'negative_image_caption'"),
    ({**GOOD, "negative_image_caption": "x"}, "given without 'negative_image'"),
    (
        {
            **GOOD,
            "negative_image": "manifest:images/b.png",
            "negative_image_caption": "a red square",
        },
        "the negative image's caption is the caption itself",
    ),
    (["not", "an", "object"], "a row must be a JSON object, got list"),
]


@pytest.mark.parametrize(("row", "message"), BAD_ROWS, ids=lambda v: str(v)[:40])
def test_every_jsonl_refusal_names_file_and_line(folder: Path, row: Any, message: str) -> None:
    path = folder / "bad.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_manifest(path, _store(folder))
    assert str(err.value).startswith(f"{path}:3: ")
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"image": "manifest:images/a.png", "caption": ', "not valid JSON"),
        ('{"image": "a", "image": "b", "caption": "c"}', "the field 'image' appears twice"),
    ],
)
def test_malformed_jsonl_names_the_line(folder: Path, line: str, message: str) -> None:
    path = folder / "bad.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        read_manifest(path, _store(folder))
    assert str(err.value).startswith(f"{path}:2: ")


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**GOOD, "split": "test"}, "unknown split 'test'"),
        ({**GOOD, "caption": ""}, "field 'caption' is empty"),
        ({**GOOD, "caption": None}, "field 'caption' must be a string, got null"),
        ({**GOOD, "negatives": ["a red square"]}, "negative 0 is the caption itself"),
    ],
)
def test_every_parquet_refusal_names_file_and_row(folder: Path, row: dict, message: str) -> None:
    first = {**GOOD, "split": "train", "negatives": ["x"]}
    path = _parquet(folder / "bad.parquet", [first, {**first, **row}])
    with pytest.raises(DataError) as err:
        read_manifest(path, _store(folder))
    assert str(err.value).startswith(f"{path}, item row 1: ")
    assert message in str(err.value)


def test_parquet_columns_are_checked(folder: Path) -> None:
    path = _parquet(folder / "cols.parquet", [{"image": "manifest:images/a.png", "text": "x"}])
    with pytest.raises(DataError, match=r"unknown column\(s\) 'text'") as err:
        read_manifest(path, _store(folder))
    assert str(err.value).startswith(str(path))
    path = _parquet(folder / "cols2.parquet", [{"image": "manifest:images/a.png"}])
    with pytest.raises(DataError, match=r"missing column\(s\) 'caption'"):
        read_manifest(path, _store(folder))
    (folder / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        read_manifest(folder / "junk.parquet", _store(folder))


def test_manifest_file_level_refusals(folder: Path) -> None:
    with pytest.raises(DataError, match=r"unknown manifest format '\.csv'"):
        read_manifest(folder / "m.csv", _store(folder))
    with pytest.raises(DataError, match="cannot read the manifest"):
        read_manifest(folder / "absent.jsonl", _store(folder))
    (folder / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match="no examples"):
        read_manifest(folder / "empty.jsonl", _store(folder))
    with pytest.raises(DataError, match="missing field 'caption'"):
        write_manifest(folder / "w.jsonl", [{"image": "x"}])


def _one_row(folder: Path, image: str, **extra: Any) -> Path:
    path = folder / "img.jsonl"
    rows = [GOOD, {"image": image, "caption": "c", **extra}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("manifest:../outside.png", "'..' component"),
        ("manifest:/etc/passwd", "the path is absolute"),
        ("manifest:images/none.png", "not found in image root 'manifest'"),
        ("nowhere:a.png", "unknown image root 'nowhere'"),
        ("manifest:images/text.png", "not a readable image"),
        ("manifest:images/big.png", "more than the limit of 100"),
        ("mem:absent", "no in-memory image"),
    ],
)
def test_unusable_images_are_refused_with_file_and_line(
    folder: Path, image: str, message: str
) -> None:
    (folder / "images" / "text.png").write_text("not an image", encoding="utf-8")
    (folder / "images" / "big.png").write_bytes(_png((20, 20)))
    path = _one_row(folder, image)
    with pytest.raises(DataError) as err:
        read_manifest(path, _store(folder, max_pixels=100))
    assert str(err.value).startswith(f"{path}:2: field 'image': ")
    assert message in str(err.value)


def test_a_link_out_of_the_root_is_refused(folder: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "x.png"
    elsewhere.write_bytes(_png())
    (folder / "images" / "link.png").symlink_to(elsewhere)
    path = _one_row(folder, "manifest:images/link.png")
    with pytest.raises(DataError, match=r"outside its root .*\[unsafe\]") as err:
        read_manifest(path, _store(folder))
    assert str(err.value).startswith(f"{path}:2: ")


def test_negative_images_are_checked_and_more_problems_are_counted(folder: Path) -> None:
    path = folder / "m.jsonl"
    rows = [
        GOOD,
        {**GOOD, "negative_image": "manifest:images/x.png", "negative_image_caption": "c"},
        {**GOOD, "image": "manifest:images/y.png"},
        {**GOOD, "image": "manifest:images/z.png"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_manifest(path, _store(folder))
    text = str(err.value)
    assert text.startswith(f"{path}:2: field 'negative_image': image 'manifest:images/x.png'")
    assert "and 2 more unusable image(s), first at line 3, 4" in text
    assert read_manifest(path, _store(folder), check_images=False).examples[1].negative_image


def test_images_resolve_as_in_evaluation(folder: Path) -> None:
    """Bare references are COCO's, named roots the store's; the pixel limit is the store's."""
    coco = folder / "coco_train"
    coco.mkdir()
    (coco / "000000000009.jpg").write_bytes(_png())
    path = folder / "m.jsonl"
    rows = [
        {"image": "000000000009.jpg", "caption": "bare"},
        {"image": "train2017:000000000009.jpg", "caption": "train"},
        {"image": "synthetic:small-red-ball.left_of.large-blue-box", "caption": "rendered"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    manifest = read_manifest(path, _store(folder, coco_train2017=coco))
    assert len(manifest.examples) == 3
    with pytest.raises(DataError, match="224×224 = 50,176 pixels"):
        read_manifest(path, _store(folder, coco_train2017=coco, max_pixels=1000))


# --- swaps ---------------------------------------------------------------------------------

TAGGER = LexiconTagger()


@pytest.mark.parametrize(
    ("caption", "seed", "expected"),
    [
        (
            "A small red ball is to the left of a large blue box.",
            0,
            ["A large blue box is to the left of a small red ball."],
        ),
        (
            "A small red ball is to the left of a large blue box.",
            1,
            ["A small blue ball is to the left of a large red box."],
        ),
        ("A man riding a horse next to a dog.", 0, ["A dog riding a horse next to a man."]),
        ("A man riding a horse next to a dog.", 1, ["A horse riding a man next to a dog."]),
        ("The horse is eating the grass.", 0, ["The grass is eating the horse."]),
        ("An elephant standing near a tree.", 0, ["A tree standing near an elephant."]),
        ("Dogs chase cats", 0, ["Cats chase dogs"]),
    ],
)
def test_swap_negatives_exact(caption: str, seed: int, expected: list[str]) -> None:
    assert swap_negatives(caption, TAGGER, random.Random(seed)) == expected


def test_swap_candidates_exact() -> None:
    assert swap_candidates("A small red ball is to the left of a large blue box.", TAGGER) == [
        "A small red box is to the left of a large blue ball.",  # nouns
        "A small blue ball is to the left of a large red box.",  # colours
        "A large red ball is to the left of a small blue box.",  # sizes
        "A large blue box is to the left of a small red ball.",  # noun phrases
    ]
    # a compound noun moves whole; words of one noun phrase are not exchanged
    assert swap_candidates("A fire hydrant next to a red car.", TAGGER) == [
        "A car next to a red fire hydrant."
    ]
    assert swap_candidates("A man sitting on a bench holding an umbrella.", TAGGER)[-1] == (
        "A man holding on a bench sitting an umbrella."  # verbs
    )


@pytest.mark.parametrize(
    "caption", ["Two dogs.", "A dog and a dog.", "A man.", "", "Zorp blick flarn.", "A red ball."]
)
def test_no_swappable_pair_gives_no_negative(caption: str) -> None:
    assert swap_negatives(caption, TAGGER, random.Random(0), k=5) == []


def test_swaps_are_deterministic_distinct_and_never_the_caption() -> None:
    captions = [
        "A man riding a horse next to a dog.",
        "A white cat sitting on a red chair next to a black dog.",
        "Two people walking a dog down the street with a small bus.",
        "A A man man riding riding a horse.",
    ]
    for caption in captions:
        first = swap_negatives(caption, TAGGER, random.Random(7), k=10)
        assert first == swap_negatives(caption, LexiconTagger(), random.Random(7), k=10)
        keys = [" ".join(n.casefold().split()) for n in first]
        assert len(set(keys)) == len(keys)
        assert " ".join(caption.casefold().split()) not in keys
    rng = random.Random(3)
    assert [swap_negatives(c, TAGGER, rng) for c in captions] == [
        swap_negatives(c, TAGGER, r) for r in [random.Random(3)] for c in captions
    ]


def test_tagger_is_pluggable() -> None:
    class Fixed:
        def tag(self, tokens):
            return ["NOUN" if t in {"alpha", "beta"} else "X" for t in tokens]

    assert swap_negatives("alpha then beta", Fixed(), random.Random(0)) == ["beta then alpha"]
    assert tokenize("A dog's t-shirt, red.") == ["A", "dog's", "t-shirt", ",", "red", "."]

    class Short:
        def tag(self, tokens):
            return ["NOUN"]

    with pytest.raises(ValueError, match="returned 1 tags for 3 tokens"):
        swap_negatives("alpha then beta", Short(), random.Random(0))
    with pytest.raises(ValueError, match="k must be"):
        swap_negatives("alpha", Fixed(), random.Random(0), k=-1)


def test_lexicon_tagger_rules() -> None:
    tags = TAGGER.tag(["Boxes", "dogs", "3", ",", "zorp", "red", "small", "left"])
    assert tags == ["NOUN", "NOUN", "NUM", "PUNCT", "X", "ADJ:colour", "ADJ:size", "ADP"]
    assert LexiconTagger({"Foo": "NOUN"}).tag(["foo", "bar"]) == ["NOUN", "X"]


def test_the_spacy_tagger_tags_or_says_what_is_missing() -> None:
    """spaCy is optional (not installed by the tests): without it, or without its English
    model, the adapter is a clear error saying what to install; with both, it tags."""
    import importlib.util

    from lexsem.train.swaps import SpacyTagger

    if importlib.util.find_spec("spacy") is None:
        with pytest.raises(LexsemError, match="spacy"):
            SpacyTagger()
        return
    try:
        tagger = SpacyTagger()
    except LexsemError as exc:
        assert "model" in str(exc).lower()
        return
    assert swap_negatives("The horse is eating the grass.", tagger, random.Random(0)) == [
        "The grass is eating the horse."
    ]


def _coco_json(path: Path, images: list[dict], annotations: list[dict]) -> Path:
    path.write_text(json.dumps({"images": images, "annotations": annotations}), encoding="utf-8")
    return path


COCO_IMAGES = [
    {"id": 9, "file_name": "000000000009.jpg", "height": 8, "width": 8},
    {"id": 25, "file_name": "000000000025.jpg", "height": 8, "width": 8},
]
COCO_ANNOTATIONS = [
    {"image_id": 9, "id": 1, "caption": "A man riding a horse next to a dog.\n"},
    {"image_id": 25, "id": 2, "caption": "A giraffe."},
    {"image_id": 9, "id": 3, "caption": "The  horse is eating the grass."},
]


def test_coco_captions_manifest(tmp_path: Path) -> None:
    captions = _coco_json(tmp_path / "captions_train2017.json", COCO_IMAGES, COCO_ANNOTATIONS)
    out = tmp_path / "coco.jsonl"
    summary = coco_captions_manifest(captions, "train2017", out, TAGGER, seed=0)
    assert summary == {
        "path": str(out),
        "rows": 3,
        "images": 2,
        "without_negative": 1,
        "dev_rows": 0,
    }
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["image"], r["caption"], r["negatives"], r["split"]) for r in rows] == [
        (
            "train2017:000000000009.jpg",
            "A man riding a horse next to a dog.",
            ["A dog riding a horse next to a man."],
            "train",
        ),
        ("train2017:000000000025.jpg", "A giraffe.", [], "train"),
        (
            "train2017:000000000009.jpg",
            "The horse is eating the grass.",
            ["The grass is eating the horse."],
            "train",
        ),
    ]
    coco = tmp_path / "train2017"
    coco.mkdir()
    for img in COCO_IMAGES:
        (coco / img["file_name"]).write_bytes(_png())
    manifest = read_manifest(out, _store(tmp_path, coco_train2017=coco))
    assert len(manifest.examples) == 3
    # a dev share keeps every caption of an image in one split
    coco_captions_manifest(
        captions, "train2017", tmp_path / "d.parquet", TAGGER, 0, dev_fraction=0.5
    )
    split = read_manifest(tmp_path / "d.parquet", _store(tmp_path, coco_train2017=coco))
    by_image: dict[str, set[str]] = {}
    for ex in split.examples:
        by_image.setdefault(ex.image, set()).add(ex.split)
    assert all(len(s) == 1 for s in by_image.values())


@pytest.mark.parametrize(
    ("images", "annotations", "message"),
    [
        (
            COCO_IMAGES,
            [{"image_id": 7, "caption": "x"}],
            r"annotations\[0\].*'image_id' 7 names no image",
        ),
        (COCO_IMAGES, [{"image_id": 9, "caption": ""}], r"annotations\[0\].*'caption' is empty"),
        ([{"id": 1, "file_name": "../x.jpg"}], [], r"images\[0\].*'\.\.' component"),
        ([{"id": "1", "file_name": "x.jpg"}], [], r"images\[0\].*'id' must be an integer"),
        (COCO_IMAGES + COCO_IMAGES[:1], [], r"images\[2\].*image id 9 appears twice"),
    ],
)
def test_coco_captions_refusals_name_file_and_entry(
    tmp_path: Path, images: list, annotations: list, message: str
) -> None:
    captions = _coco_json(tmp_path / "c.json", images, annotations)
    with pytest.raises(DataError, match=message) as err:
        coco_captions_manifest(captions, "train2017", tmp_path / "o.jsonl", TAGGER, 0)
    assert str(err.value).startswith(str(captions))
    with pytest.raises(ValueError, match="image root name"):
        coco_captions_manifest(captions, "/abs", tmp_path / "o.jsonl", TAGGER, 0)


# --- rendered scenes -----------------------------------------------------------------------


def _evaluation_texts() -> set[str]:
    texts: set[str] = set()
    for name in ("synthetic", "synthetic_bi"):
        texts |= {t for item in load_benchmark(name).items for t in item.texts()}
    return texts


def _evaluation_refs() -> set[str]:
    refs = {it.image for it in load_benchmark("synthetic").items}
    for it in load_benchmark("synthetic_bi").items:
        refs |= {it.image0, it.image1}
    return refs


def test_rendered_examples_are_disjoint_from_the_synthetic_benchmarks() -> None:
    examples = list(rendered_examples(400, seed=0, size=48))
    ids = {e.scene_id for e in examples} | {e.negative_scene_id for e in examples}
    ids.discard(None)
    eval_ids = {ref.removeprefix("synthetic:") for ref in _evaluation_refs()}
    assert eval_ids == {s.id for s in evaluation_scenes()}
    assert not ids & eval_ids
    texts = {t for e in examples for t in (e.caption, *e.negatives, e.negative_image_caption)}
    texts.discard(None)
    assert not texts & _evaluation_texts()
    assert len({e.scene_id for e in examples}) == 400  # no scene twice
    pool = scene_pool(0)
    assert len(pool) == 46080 - len(evaluation_scenes())
    assert not set(pool) & evaluation_scenes()


def test_rendered_examples_are_reproducible_and_well_formed() -> None:
    a = list(rendered_examples(6, seed=5, size=48))
    assert a == list(rendered_examples(6, seed=5, size=48))
    assert [e.scene_id for e in a] != [e.scene_id for e in rendered_examples(6, seed=6, size=48)]
    assert any(e.negative_image is not None for e in a)
    for e in a:
        assert e.image.startswith(b"\x89PNG")
        assert e.caption not in e.negatives and len(set(e.negatives)) == len(e.negatives)
        assert len(e.negative_kinds) == len(e.negatives)
        if e.negative_image is not None:
            assert e.negative_image_caption in e.negatives
            assert e.negative_scene_id != e.scene_id
            assert e.negative_image != e.image
    with pytest.raises(ValueError, match="n must be in"):
        list(rendered_examples(10**6, seed=0))
    with pytest.raises(ValueError, match="image size"):
        list(rendered_examples(1, seed=0, size=8))


def test_write_rendered_makes_a_readable_manifest(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    path = write_rendered(out, 10, seed=1, size=48, dev_fraction=0.2)
    manifest = read_manifest(path, _store(tmp_path))
    assert len(manifest.split("train")) == 8 and len(manifest.split("dev")) == 2
    first = next(rendered_examples(1, seed=1, size=48))
    assert manifest.examples[0].caption == first.caption
    assert (out / "images" / "000000.png").read_bytes() == first.image
    meta = json.loads((out / "rendered.json").read_text(encoding="utf-8"))
    assert meta["seed"] == 1 and meta["examples"] == 10
    assert meta["held_out"]["scenes"] == len(evaluation_scenes())
    with pytest.raises(LexsemError, match="exists already"):
        write_rendered(out, 10, seed=1, size=48)


def test_a_line_nested_too_deep_names_the_line(folder: Path) -> None:
    """A line of 200,000 nested arrays: the depth check of `lexsem.jsonl`, one `DataError`
    naming the file and the line, never a RecursionError."""
    from lexsem.jsonl import MAX_DEPTH

    path = folder / "deep.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + "[" * 200_000 + "]" * 200_000 + "\n", "utf-8")
    with pytest.raises(DataError) as err:
        read_manifest(path, _store(folder))
    assert str(err.value) == f"{path}:2: JSON nested more than {MAX_DEPTH} deep"

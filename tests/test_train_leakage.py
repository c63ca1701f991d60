"""The leakage guard: training data against the benchmarks a model is judged on, by image
content (the evaluation cache's key), by COCO image id and by caption; a disjoint manifest
passes; an overlap raises unless allowed, and the report records it (VISLA's spatial triplets
use COCO train2017 images: VISLA, §3.3)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from lexsem.benchmarks.base import Benchmark, LoadedSubset, SubsetSpec
from lexsem.benchmarks.items import PairItem, QuadItem
from lexsem.benchmarks.load import LoadedBenchmark, load_benchmark
from lexsem.benchmarks.sources.synthetic_images import synthetic_image_bytes
from lexsem.engine.keys import image_key
from lexsem.images.image_store import ImageStore
from lexsem.train.leakage import (
    LeakageError,
    check_leakage,
    coco_id,
    item_images,
    normalise_text,
    raise_on_overlap,
)
from lexsem.train.manifest import Example, Manifest, read_manifest, write_manifest
from lexsem.train.rendered import write_rendered


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buf, format="PNG")
    return buf.getvalue()


def _fixture_benchmark(items: list[Any], name: str = "fixture") -> LoadedBenchmark:
    spec = Benchmark(
        name=name,
        description="a hand-made benchmark for the leakage guard",
        item_kind="pair",
        subsets=(SubsetSpec("all", None, expected_items=len(items)),),
        loader=lambda *_: None,  # type: ignore[arg-type,return-value]
        text_tasks=(),
        image_tasks=("itt",),
    )
    return LoadedBenchmark(spec, [LoadedSubset(spec.subsets[0], items, None, "0" * 64)])


@pytest.fixture
def store(tmp_path: Path) -> ImageStore:
    coco = tmp_path / "coco_train"
    coco.mkdir()
    (coco / "COCO_train2014_000000222235.jpg").write_bytes(_png((1, 2, 3)))
    (coco / "000000000009.jpg").write_bytes(_png((4, 5, 6)))
    return ImageStore(image_root=tmp_path / "images", coco_train2017=coco)


def _manifest(tmp_path: Path, store: ImageStore, rows: list[Example]) -> Manifest:
    return read_manifest(write_manifest(tmp_path / "m.jsonl", rows), store)


def test_keys() -> None:
    assert coco_id("000000222235.jpg") == 222235
    assert coco_id("train2017:000000222235.jpg") == 222235
    assert coco_id("coco2017:sub/COCO_train2014_000000222235.jpg") == 222235
    assert coco_id("COCO_val2014_000000000042.JPG") == 42
    assert coco_id("12.png") is None
    assert coco_id("synthetic:small-red-ball.left_of.large-blue-box") is None
    assert coco_id("mem:bivlc/test/3/image") is None
    assert normalise_text("  A Dog,  on the\tSOFA! ") == "a dog on the sofa"
    assert normalise_text("ﬁne café") == "fine café"
    quad = QuadItem("q", "s", "i0", "c0", "i1", "c1")
    assert item_images(quad) == ("i0", "i1")
    assert item_images(PairItem("p", "s", None, "a", "b")) == ()


def test_overlap_by_content_hash_with_the_synthetic_benchmark(tmp_path: Path) -> None:
    bench = load_benchmark("synthetic/swap_obj")
    item = bench.items[3]
    (tmp_path / "copy.png").write_bytes(synthetic_image_bytes(item.image))  # another name
    store = ImageStore(image_root=tmp_path / "images")
    manifest = _manifest(tmp_path, store, [Example("manifest:copy.png", "an unrelated caption")])
    report = check_leakage(manifest, [bench], store)
    image = report.benchmarks[0].overlaps["image"]
    assert (image.items, image.training_rows) == (1, 1)
    assert image.examples[0]["item"] == item.id
    assert image.examples[0]["benchmark"] == item.image
    assert image.examples[0]["training"] == f"{manifest.path}:1 manifest:copy.png"
    assert report.benchmarks[0].overlaps["caption"].items == 0
    assert report.benchmarks[0].images_compared == report.benchmarks[0].images == 100
    assert report.has_overlap()


def test_overlap_by_coco_id_even_when_the_benchmark_image_is_absent(
    tmp_path: Path, store: ImageStore
) -> None:
    bench = _fixture_benchmark(
        [
            PairItem("0", "all", "000000222235.jpg", "a cat on a mat", "a mat on a cat"),
            PairItem("1", "all", "000000000777.jpg", "a dog", "a log"),
        ],
        name="visla_like",
    )
    manifest = _manifest(
        tmp_path,
        store,
        [
            Example("train2017:COCO_train2014_000000222235.jpg", "a photo"),
            Example("train2017:000000000009.jpg", "another photo"),
        ],
    )
    report = check_leakage(manifest, [bench], store)
    b = report.benchmarks[0]
    assert b.overlaps["coco_id"].items == 1
    assert b.overlaps["coco_id"].examples[0]["item"] == "0"
    assert b.overlaps["image"].items == 0
    # the benchmark's COCO files are not on disk: recorded, their ids still compared
    assert (b.images, b.images_compared, b.images_unavailable) == (2, 0, 2)
    assert b.unavailable_examples[0]["why"].startswith("missing: ")


def test_overlap_by_caption(tmp_path: Path, store: ImageStore) -> None:
    synthetic = load_benchmark("synthetic/replace_rel")
    text = synthetic.items[0].n
    fixture = _fixture_benchmark([PairItem("7", "all", None, "Two dogs play.", "Two logs play.")])
    rows = [
        Example("train2017:000000000009.jpg", text.upper().rstrip(".")),  # its negative
        Example("train2017:000000000009.jpg", "a photo", ("two LOGS play",)),
    ]
    report = check_leakage(_manifest(tmp_path, store, rows), [synthetic, fixture], store)
    syn, fix = report.benchmarks
    assert syn.overlaps["caption"].items == 1 and syn.overlaps["caption"].training_rows == 1
    assert syn.overlaps["caption"].examples[0]["benchmark"] == text
    assert fix.overlaps["caption"].items == 1
    assert fix.overlaps["caption"].examples[0]["training"].endswith("negative 'two LOGS play'")
    assert fix.items_overlapping == 1
    summary = report.summary()
    assert "synthetic: 1 item(s) share a text with 1 training row(s)" in summary
    assert "fixture: 1 item(s)" in summary


def test_a_disjoint_manifest_passes(tmp_path: Path) -> None:
    path = write_rendered(tmp_path / "rendered", 30, seed=0)
    store = ImageStore(image_root=tmp_path / "images")
    manifest = read_manifest(path, store)
    benches = [load_benchmark("synthetic"), load_benchmark("synthetic_bi")]
    report = check_leakage(manifest, benches, store)
    assert not report.has_overlap()
    for b in report.benchmarks:
        assert b.images_compared == b.images > 0
        assert all(o.items == 0 for o in b.overlaps.values())
    assert raise_on_overlap(report, allow=False) is report
    assert json.loads(report.to_json())["overlap"] is False


def test_an_overlap_raises_unless_allowed_and_allowing_records_it(
    tmp_path: Path, store: ImageStore
) -> None:
    bench = _fixture_benchmark(
        [PairItem("0", "all", "000000222235.jpg", "a cat", "a hat")], name="visla_spatial"
    )
    manifest = _manifest(
        tmp_path, store, [Example("train2017:COCO_train2014_000000222235.jpg", "a photo")]
    )
    report = check_leakage(manifest, [bench], store)
    with pytest.raises(LeakageError) as err:
        raise_on_overlap(report, allow=False)
    text = str(err.value)
    assert "visla_spatial: 1 item(s) share a COCO image id with 1 training row(s)" in text
    assert "allow=True" in text and "000000222235.jpg" in text
    allowed = raise_on_overlap(report, allow=True)
    assert allowed.allowed and not report.allowed
    record = json.loads(allowed.to_json())
    assert record["allowed"] is True and record["overlap"] is True
    assert record["manifest"]["sha256"] == manifest.sha256
    assert record["benchmarks"][0]["overlaps"]["coco_id"]["items"] == 1


def test_compare_images_off_reads_no_benchmark_image(tmp_path: Path, store: ImageStore) -> None:
    bench = load_benchmark("synthetic/swap_att")
    manifest = _manifest(tmp_path, store, [Example("train2017:000000000009.jpg", "a photo")])
    report = check_leakage(manifest, [bench], store, compare_images=False)
    b = report.benchmarks[0]
    assert (b.images_compared, b.images_unavailable) == (0, 0)
    assert image_key(b"x") == image_key(b"x", exif_transpose=True)  # the plain content key

"""HF-hosted benchmarks (BiVLC, Winoground, ARO) from small parquet fixtures written here.

The fixtures mimic what `datasets` writes: Image columns are structs {bytes, path} holding PNG
bytes, and the schema carries the `huggingface` features metadata. No Hub access.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from builders.hf_parquet import (
    BIVLC_ROWS,
    _no_network,
    _parquet_loader,
    bivlc_columns,
    image_cell,
    order_columns,
    png,
    vg_attribution_columns,
    vg_relation_columns,
    winoground_columns,
    write_bivlc,
    write_parquet,
)
from lexsem.benchmarks import aro, bivlc, winoground
from lexsem.benchmarks.items import MultiCaptionItem, QuadItem
from lexsem.benchmarks.sources import hf_images, hf_load
from lexsem.errors import DataError, LexsemError

REAL_STORED_TOKEN = hf_load.stored_token


# ---------------------------------------------------------------------------------------------
# Fixtures in the formats of BiVLC, Winoground and ARO


# ---------------------------------------------------------------------------------------------
# BiVLC


def test_bivlc_items_and_image_bytes_round_trip(tmp_path: Path) -> None:
    cols = write_bivlc(tmp_path)
    res = bivlc.load(data_dir=tmp_path)
    assert [p.name for p in res.files] == [
        "test-00000-of-00002.parquet",
        "test-00001-of-00002.parquet",
    ]
    items = res.items
    assert len(items) == 5 and all(isinstance(it, QuadItem) for it in items)
    it = items[3]
    assert it.id == "3"
    assert it.subset == "replace_rel"
    assert it.caption0 == "A cup on a table." and it.caption1 == "A cup under a table."
    assert it.group == (("type", "replace"), ("subtype", "rel"))
    assert it.image0 == "mem:bivlc/test/3/image"
    assert it.image1 == "mem:bivlc/test/3/negative_image"
    assert [i.subset for i in items] == [
        "swap_obj",
        "replace_att",
        "add_obj",
        "replace_rel",
        "add_att",
    ]
    # every ref resolves to the stored bytes (row groups of 2 over two shards)
    store = res.images
    assert len(store) == 10
    assert list(store)[:2] == ["mem:bivlc/test/0/image", "mem:bivlc/test/0/negative_image"]
    for k, item in enumerate(items):
        assert store[item.image0] == cols["image"][k]["bytes"]
        assert store[item.image1] == cols["negative_image"][k]["bytes"]
    assert store.open(items[4].image1).size == (5, 5)
    assert hf_images.image_bytes("mem:bivlc/test/2/image") == cols["image"][2]["bytes"]
    assert "mem:bivlc/test/9/image" not in store
    with pytest.raises(KeyError):
        store["mem:bivlc/test/9/image"]


def test_bivlc_random_access_order_does_not_matter(tmp_path: Path) -> None:
    cols = write_bivlc(tmp_path)
    store = bivlc.load(data_dir=tmp_path).images
    for k in (4, 0, 3, 1, 2, 0):
        assert store[f"mem:bivlc/test/{k}/negative_image"] == cols["negative_image"][k]["bytes"]


def test_missing_field_names_dataset_row_and_field(tmp_path: Path) -> None:
    cols = bivlc_columns()
    del cols["negative_caption"]
    write_parquet(tmp_path / "test.parquet", cols)
    with pytest.raises(DataError) as exc:
        bivlc.load(data_dir=tmp_path)
    msg = str(exc.value)
    assert "bivlc" in msg and "row 0" in msg and "'negative_caption'" in msg
    assert "test.parquet" in msg


def test_missing_image_column(tmp_path: Path) -> None:
    cols = bivlc_columns()
    del cols["negative_image"]
    write_parquet(tmp_path / "test.parquet", cols)
    with pytest.raises(DataError, match="missing field 'negative_image'"):
        bivlc.load(data_dir=tmp_path)


def test_null_and_empty_captions(tmp_path: Path) -> None:
    cols = bivlc_columns()
    cols["caption"][2] = None
    write_parquet(tmp_path / "a" / "test.parquet", cols)
    with pytest.raises(DataError, match=r"row 2.*'caption' is null"):
        bivlc.load(data_dir=tmp_path / "a")
    cols = bivlc_columns()
    cols["negative_caption"][1] = "  "
    write_parquet(tmp_path / "b" / "test.parquet", cols)
    with pytest.raises(DataError, match=r"row 1.*'negative_caption' is empty"):
        bivlc.load(data_dir=tmp_path / "b")
    assert bivlc.load(data_dir=tmp_path / "b", strict=False).items[1].caption1 == "  "


def test_image_without_bytes_errors_on_access_or_reads_its_path(tmp_path: Path) -> None:
    cols = bivlc_columns()
    cols["image"][1] = image_cell(None, None)
    side = png((9, 9, 9))
    (tmp_path / "side.png").write_bytes(side)
    cols["image"][2] = image_cell(None, "side.png")  # relative to the parquet file
    write_parquet(tmp_path / "test.parquet", cols)
    store = bivlc.load(data_dir=tmp_path).images  # loading the items reads no image
    assert store["mem:bivlc/test/2/image"] == side
    with pytest.raises(DataError, match=r"row 1.*image field 'image' is empty"):
        store["mem:bivlc/test/1/image"]


@pytest.fixture
def snapshot(tmp_path: Path) -> dict[str, Any]:
    """A BiVLC snapshot whose parquet file (in data/) names some images by path only: one next
    to it, one repository-relative, and escapes — `..`, absolute paths, a link out of the
    snapshot — towards a secret file beside the snapshot."""
    root = tmp_path / "snap"
    (root / "data").mkdir(parents=True)
    (root / "images").mkdir()
    secret = tmp_path / "secret.png"
    secret.write_bytes(png((6, 6, 6)))
    (root / "data" / "side.png").write_bytes(png((1, 1, 1)))
    (root / "images" / "repo.png").write_bytes(png((2, 2, 2)))
    (root / "data" / "link.png").symlink_to(secret)
    (root / "data" / "inner.png").symlink_to(root / "images" / "repo.png")
    paths = {
        0: "side.png",  # next to the parquet file
        1: "images/repo.png",  # relative to the snapshot (the repository)
        2: "inner.png",  # a link that stays inside the snapshot
        3: "../../secret.png",
        4: str(secret),  # absolute, outside
        5: "/etc/shadow",
    }
    cols = bivlc_columns([*BIVLC_ROWS, ("x", "y", "add", "obj")])
    for row, path in paths.items():
        cols["image"][row] = image_cell(None, path)
    cols["negative_image"][0] = image_cell(None, "link.png")
    write_parquet(root / "data" / "test-00000-of-00001.parquet", cols)
    return {"root": root, "secret": secret}


def test_image_paths_in_parquet_are_read_inside_the_snapshot_only(
    snapshot: dict[str, Any],
) -> None:
    from lexsem.images.refs import ImageError

    store = bivlc.load(data_dir=snapshot["root"]).images
    assert store["mem:bivlc/test/0/image"] == png((1, 1, 1))
    assert store["mem:bivlc/test/1/image"] == png((2, 2, 2))
    assert store["mem:bivlc/test/2/image"] == png((2, 2, 2))
    refused = {
        "mem:bivlc/test/3/image": r"'\.\.' component",
        "mem:bivlc/test/4/image": "absolute",
        "mem:bivlc/test/5/image": "absolute",
        "mem:bivlc/test/0/negative_image": "outside its root",
    }
    for ref, why in refused.items():
        with pytest.raises(ImageError, match=why) as err:
            store[ref]
        assert err.value.reason == "unsafe" and not err.value.skippable, ref
    assert str(snapshot["root"]) in str(_error(store, "mem:bivlc/test/3/image"))


def _error(store: Any, ref: str) -> Exception:
    try:
        store[ref]
    except Exception as exc:
        return exc
    raise AssertionError(f"{ref} was read")


def test_escaping_image_paths_are_refused_by_the_engine_even_when_skipping(
    snapshot: dict[str, Any],
) -> None:
    from lexsem.engine.image_embed import embed_images
    from lexsem.images.image_store import ImageStore
    from lexsem.images.refs import ImageError

    images = ImageStore()
    images.add_mapping(bivlc.load(data_dir=snapshot["root"]).images)

    class Encoder:
        name = "never"

        @property
        def fingerprint(self) -> dict[str, Any]:
            return {"backend": "never"}

        def preprocess(self, image: Any) -> Any:
            raise AssertionError("an escaping image was decoded")

        def encode_images(self, batch: Any) -> Any:
            raise AssertionError("an escaping image was encoded")

    with pytest.raises(ImageError) as err:
        embed_images(Encoder(), ["mem:bivlc/test/4/image"], images, None, on_error="skip")
    assert err.value.reason == "unsafe" and str(snapshot["secret"]) in str(err.value)


def test_a_single_parquet_file_confines_paths_to_its_folder(tmp_path: Path) -> None:
    from lexsem.images.refs import ImageError

    (tmp_path / "d").mkdir()
    (tmp_path / "outside.png").write_bytes(png((3, 3, 3)))
    cols = bivlc_columns()
    cols["image"][0] = image_cell(None, "../outside.png")
    write_parquet(tmp_path / "d" / "test.parquet", cols)
    store = bivlc.load(data_dir=tmp_path / "d" / "test.parquet").images
    with pytest.raises(ImageError, match=r"'\.\.' component"):
        store["mem:bivlc/test/0/image"]


def test_image_paths_from_hub_data_are_never_read(tmp_path: Path, monkeypatch) -> None:
    from lexsem.images.refs import ImageError

    _no_network(monkeypatch)
    secret = tmp_path / "secret.png"
    secret.write_bytes(png((6, 6, 6)))
    cols = bivlc_columns()
    cols["image"][0] = image_cell(None, str(secret))
    write_parquet(tmp_path / "test.parquet", cols)
    load = _parquet_loader([tmp_path / "test.parquet"], tmp_path / "hf-cache", [])
    store = bivlc.load(load_dataset=load).images
    with pytest.raises(ImageError, match="only inside a local snapshot folder") as err:
        store["mem:bivlc/test/0/image"]
    assert err.value.reason == "unsafe"
    assert store["mem:bivlc/test/1/image"] == cols["image"][1]["bytes"]


def test_parquet_export_layout_and_env_data_dir(tmp_path: Path, monkeypatch) -> None:
    cols = bivlc_columns()
    base = tmp_path / "lexsem-data"
    write_parquet(base / "hf" / "imirandam" / "BiVLC" / "default" / "test" / "0000.parquet", cols)
    monkeypatch.setenv("LEXSEM_DATA_DIR", str(base))
    res = bivlc.load()  # offline in tests: found via $LEXSEM_DATA_DIR/hf/<repo>
    assert len(res.items) == 5
    assert res.images[res.items[0].image0] == cols["image"][0]["bytes"]


def test_offline_without_data_dir_says_how(monkeypatch) -> None:
    monkeypatch.setenv("LEXSEM_OFFLINE", "1")
    with pytest.raises(LexsemError, match="data_dir"):
        bivlc.load()


def test_no_parquet_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no \.parquet files"):
        bivlc.load(data_dir=tmp_path)
    with pytest.raises(DataError, match="does not exist"):
        bivlc.load(data_dir=tmp_path / "nope")


# ---------------------------------------------------------------------------------------------
# Winoground


def test_winoground_items(tmp_path: Path) -> None:
    cols = winoground_columns()
    write_parquet(tmp_path / "data" / "test-00000-of-00001.parquet", cols)
    res = winoground.load(data_dir=tmp_path)  # local files: no token needed
    items = res.items
    assert [i.id for i in items] == ["0", "1", "2"]
    it = items[1]
    assert it.subset == "all"
    assert it.caption0 == "the dog bit the man" and it.caption1 == "the man bit the dog"
    assert dict(it.group) == {
        "tag": "Relation",
        "secondary_tag": "Symbolic",
        "num_main_preds": "1",
        "collapsed_tag": "Relation",
    }
    assert res.images[it.image0] == cols["image_0"][1]["bytes"]
    assert res.images[it.image1] == cols["image_1"][1]["bytes"]
    assert it.image1 == "mem:winoground/test/1/image_1"


def test_gated_without_token_explains(monkeypatch) -> None:
    _no_network(monkeypatch)

    def never(*a, **k):
        raise AssertionError("must not reach the Hub without a token")

    with pytest.raises(LexsemError) as exc:
        winoground.load(load_dataset=never)
    msg = str(exc.value)
    assert "gated" in msg and "HF_TOKEN" in msg and "accept its terms" in msg
    assert "huggingface.co/datasets/facebook/winoground" in msg


def test_gated_refusal_from_the_hub_explains(monkeypatch) -> None:
    _no_network(monkeypatch)

    def refuse(repo, **kwargs):
        raise RuntimeError(
            f"Dataset '{repo}' is a gated dataset on the Hub. You must be authenticated"
        )

    with pytest.raises(LexsemError, match="HF_TOKEN"):
        winoground.load(load_dataset=refuse, token="hf_x")


def test_token_from_environment(monkeypatch) -> None:
    _no_network(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    monkeypatch.setattr(hf_load, "stored_token", REAL_STORED_TOKEN)  # reads $HF_TOKEN first
    seen = {}

    def fake(repo, **kwargs):
        seen.update(kwargs, repo=repo)
        raise RuntimeError("stop here")

    with pytest.raises(LexsemError, match="cannot load facebook/winoground"):
        winoground.load(load_dataset=fake)
    assert seen["token"] == "hf_from_env" and seen["split"] == "test"


# ---------------------------------------------------------------------------------------------
# The Hub path, through a real `datasets.Dataset` built from the fixture files


def test_hub_path_matches_local_files(tmp_path: Path, monkeypatch) -> None:
    _no_network(monkeypatch)
    cols = write_bivlc(tmp_path / "snap")
    local = bivlc.load(data_dir=tmp_path / "snap")
    calls: list[dict[str, Any]] = []
    load = _parquet_loader(list(local.files), tmp_path / "hf-cache", calls)
    hub = bivlc.load(load_dataset=load)
    assert calls == [{"repo": "imirandam/BiVLC", "split": "test", "token": None}]
    assert hub.items == local.items
    assert hub.source == "hf:imirandam/BiVLC[test]" and hub.files == ()
    for k, item in enumerate(hub.items):
        assert hub.images[item.image0] == cols["image"][k]["bytes"]
        assert hub.images[item.image1] == cols["negative_image"][k]["bytes"]


def test_hub_path_missing_field(tmp_path: Path, monkeypatch) -> None:
    _no_network(monkeypatch)
    cols = bivlc_columns()
    del cols["subtype"]
    write_parquet(tmp_path / "test.parquet", cols)
    load = _parquet_loader([tmp_path / "test.parquet"], tmp_path / "hf-cache", [])
    with pytest.raises(DataError) as exc:
        bivlc.load(load_dataset=load)
    msg = str(exc.value)
    assert "hf:imirandam/BiVLC[test]" in msg and "row 0" in msg and "'subtype'" in msg


def test_script_dataset_falls_back_to_parquet_export(tmp_path: Path, monkeypatch) -> None:
    _no_network(monkeypatch)
    write_parquet(tmp_path / "test.parquet", winoground_columns())
    calls: list[dict[str, Any]] = []
    inner = _parquet_loader([tmp_path / "test.parquet"], tmp_path / "hf-cache", calls)

    def load(repo, **kwargs):
        if "revision" not in kwargs:
            calls.append({"repo": repo, **kwargs})
            raise RuntimeError("Dataset scripts are no longer supported, but found winoground.py")
        return inner(repo, **kwargs)

    res = winoground.load(load_dataset=load, token="hf_x")
    assert [c.get("revision") for c in calls] == [None, "refs/convert/parquet"]
    assert len(res.items) == 3 and res.items[2].caption1 == "c b a"


# ---------------------------------------------------------------------------------------------
# ARO


def test_vg_relation_items_and_crops(tmp_path: Path) -> None:
    cols = vg_relation_columns()
    write_parquet(tmp_path / "data" / "test-00000-of-00001.parquet", cols)
    res = aro.load("vg_relation", data_dir=tmp_path)
    items = res.items
    assert all(isinstance(i, MultiCaptionItem) for i in items)
    it = items[0]
    assert it.subset == "vg_relation" and it.label == "eating" and it.id == "0"
    assert it.captions == ("the horse is eating the grass", "the grass is eating the horse")
    assert it.image == "mem:aro_vg_relation/test/0/image"
    assert [i.label for i in items] == ["eating", "on", "on"]
    # the store crops like the reference: Image.open(...).convert("RGB").crop((x, y, x+w, y+h))
    for k, item in enumerate(items):
        b = cols["bbox"][k]
        want = (
            Image.open(io.BytesIO(cols["image"][k]["bytes"]))
            .convert("RGB")
            .crop((b["x"], b["y"], b["x"] + b["w"], b["y"] + b["h"]))
        )
        got = res.images.open(item.image)
        assert got.size == want.size
        assert got.tobytes() == want.tobytes()
        assert res.images.crop_box(item.image) == (b["x"], b["y"], b["w"], b["h"])
    assert res.images.open(items[0].image).size == (10, 7)
    # crop=False: the stored bytes as they are
    raw = aro.load("vg_relation", data_dir=tmp_path, crop=False)
    assert raw.images[items[0].image] == cols["image"][0]["bytes"]
    assert raw.images.crop_box(items[0].image) is None


def test_vg_relation_missing_bbox_and_bad_bbox(tmp_path: Path) -> None:
    cols = vg_relation_columns()
    del cols["bbox"]
    write_parquet(tmp_path / "a" / "test.parquet", cols)
    with pytest.raises(DataError, match=r"'bbox'.*crop=False"):
        aro.load("vg_relation", data_dir=tmp_path / "a")
    assert len(aro.load("vg_relation", data_dir=tmp_path / "a", crop=False).items) == 3
    cols = vg_relation_columns()
    cols["bbox"] = [[1, 2, 3, 4], [1, 2], [0, 0, 1, 1]]
    write_parquet(tmp_path / "b" / "test.parquet", cols)
    with pytest.raises(DataError, match=r"row 1.*'bbox' must be a box"):
        aro.load("vg_relation", data_dir=tmp_path / "b")


def test_vg_relation_missing_label(tmp_path: Path) -> None:
    cols = vg_relation_columns()
    del cols["relation_name"]
    write_parquet(tmp_path / "test.parquet", cols)
    with pytest.raises(DataError, match=r"row 0: aro_vg_relation: missing field 'relation_name'"):
        aro.load("vg_relation", data_dir=tmp_path)


def test_vg_attribution_labels_join_the_attribute_pair(tmp_path: Path) -> None:
    write_parquet(tmp_path / "test.parquet", vg_attribution_columns())
    items = aro.load("vg_attribution", data_dir=tmp_path).items
    assert [i.label for i in items] == ["white_black", "red_blue", "white_black"]
    assert items[0].subset == "vg_attribution"


@pytest.mark.parametrize(
    ("subset", "key"),
    [("coco_order", "aro_coco_order"), ("flickr30k_order", "aro_flickr30k_order")],
)
def test_order_benchmarks(tmp_path: Path, subset: str, key: str) -> None:
    cols = order_columns()
    write_parquet(tmp_path / "test-00000-of-00001.parquet", cols, row_group_size=3)
    res = aro.load(subset, data_dir=tmp_path)
    assert len(res.items) == 4
    it = res.items[3]
    assert it.subset == subset and it.label == ""
    assert it.captions[0] == "a man riding a horse 3"
    assert it.captions[1:] == tuple(f"horse a riding man a 3 {j}" for j in (1, 2, 3, 4))
    assert it.image == f"mem:{key}/test/3/images"
    assert res.images[it.image] == cols["images"][3]["bytes"]


def test_order_missing_hard_text(tmp_path: Path) -> None:
    cols = order_columns()
    del cols["hard_text_3"]
    write_parquet(tmp_path / "test.parquet", cols)
    with pytest.raises(DataError, match=r"row 0: aro_coco_order: missing field 'hard_text_3'"):
        aro.load("coco_order", data_dir=tmp_path)


# ---------------------------------------------------------------------------------------------
# Small pieces


def test_refs_and_registry() -> None:
    ref = hf_images.image_ref("bivlc", "test", 12, "negative_image")
    assert ref == "mem:bivlc/test/12/negative_image"
    assert hf_images.parse_image_ref(ref) == ("bivlc", "test", 12, "negative_image")
    for bad in ("bivlc/test/1/image", "mem:bivlc/test/x/image", "mem:a/b/c"):
        with pytest.raises(ValueError):
            hf_images.parse_image_ref(bad)
    with pytest.raises(LexsemError, match="unknown ARO subset"):
        aro.load("nope")
    assert all(d.subset == name for name, d in aro.DATASETS.items())
    assert winoground.DATASET.gated and not bivlc.DATASET.gated
    assert bivlc.DATASET.image_columns == ("image", "negative_image")
    spec = bivlc.DATASET
    assert sum(n for _, n in spec.expected_subsets) == spec.expected_rows == 2933


def test_parquet_cells_read_from_many_threads_at_once(tmp_path: Path) -> None:
    """Image decoding workers read cells of one source concurrently: every value comes back
    right (a `ParquetFile` read from several threads at once can fail inside pyarrow)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lexsem.benchmarks.sources.hf_rows import ParquetRows

    n = 4000
    blob = [bytes([k % 251]) * (300 + k % 97) for k in range(n)]
    pq.write_table(pa.table({"i": list(range(n)), "b": blob}), tmp_path / "t.parquet",
                   row_group_size=50)  # fmt: skip
    rows = ParquetRows([tmp_path / "t.parquet"], "t")
    order = [(k * 7919) % n for k in range(n)]  # jumps between row groups

    def read(k: int) -> bool:
        return rows.cell(k, "b") == blob[k] and rows.cell(k, "i") == k

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(read, order))

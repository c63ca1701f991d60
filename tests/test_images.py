"""Images: reference resolution and safety, the COCO download, and encoding each image once."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders.fakes import FakePairScorer, _noise, _to_tensor
from builders.numeric import assert_close_to_reference
from lexsem.engine.decoding import default_num_workers
from lexsem.engine.image_embed import embed_images
from lexsem.engine.keys import content_key, image_key
from lexsem.engine.pair_scores import pair_scores
from lexsem.engine.request_store import RequestStore
from lexsem.errors import DataError, DownloadError
from lexsem.images import locations as img_mod
from lexsem.images.coco_download import (
    IMAGE_ARCHIVES,
    ImageArchive,
    download_archive,
    download_coco,
)
from lexsem.images.decode import decode_image, flag_profile
from lexsem.images.image_store import ImageStore
from lexsem.images.refs import ImageError
from lexsem.models.protocols import ImageEncoder, PairScorer

pytestmark = pytest.mark.torch

# ---------------------------------------------------------------------------- fakes


class FakeImageEncoder:
    """preprocess: 8×8 RGB float tensor; encode_images: flatten + a fixed random projection."""

    name = "fake-image"

    def __init__(self, dim: int = 16) -> None:
        self.proj = np.random.default_rng(0).standard_normal((8 * 8 * 3, dim)).astype(np.float32)
        self.calls = 0
        self.n_encoded = 0

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-image", "dim": int(self.proj.shape[1])}

    def preprocess(self, image: Any) -> torch.Tensor:
        assert image.mode == "RGB"
        return _to_tensor(image)

    def encode_images(self, batch: torch.Tensor) -> np.ndarray:
        self.calls += 1
        self.n_encoded += int(batch.shape[0])
        return batch.reshape(batch.shape[0], -1).numpy() @ self.proj

    def direct(self, data: bytes) -> np.ndarray:
        x = self.preprocess(decode_image(data)).reshape(1, -1).numpy()
        return (x @ self.proj)[0]


def test_fakes_satisfy_protocols() -> None:
    assert isinstance(FakeImageEncoder(), ImageEncoder)
    assert isinstance(FakePairScorer(), PairScorer)


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _no_image_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (img_mod.COCO_VAL_ENV, img_mod.COCO_TRAIN_ENV, img_mod.IMAGE_ROOT_ENV):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def coco(tmp_path: Path) -> dict[str, Any]:
    """A val2017 / train2017 pair of folders with images, a duplicate, broken files, escapes."""
    val = tmp_path / "coco" / "val2017"
    train = tmp_path / "coco" / "train2017"
    val.mkdir(parents=True)
    train.mkdir(parents=True)
    files = {
        "a.jpg": _noise(32, 24, 1, "JPEG", quality=90),
        "b.png": _noise(50, 40, 2, "PNG"),
        "c.jpg": _noise(17, 33, 3, "JPEG"),
        "gray.png": _noise(20, 20, 4, "PNG", mode="L"),
        "sub/d.png": _noise(9, 64, 5, "PNG"),
    }
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise to display
    files["rotated.jpg"] = _noise(40, 20, 6, "JPEG", exif=exif.tobytes())
    for name, data in files.items():
        (val / name).parent.mkdir(parents=True, exist_ok=True)
        (val / name).write_bytes(data)
    (val / "dup.jpg").write_bytes(files["a.jpg"])  # same bytes as a.jpg
    train_img = _noise(30, 30, 7, "PNG")
    (train / "t.png").write_bytes(train_img)
    files["t.png"] = train_img
    (val / "truncated.jpg").write_bytes(files["a.jpg"][: len(files["a.jpg"]) // 2])
    (val / "garbage.jpg").write_bytes(b"this is not an image at all")
    outside = tmp_path / "outside.png"
    outside.write_bytes(_noise(10, 10, 8, "PNG"))
    (val / "escape.png").symlink_to(outside)
    (val / "inside_link.png").symlink_to(val / "b.png")
    store = ImageStore(coco_val2017=val, coco_train2017=train)
    return {"val": val, "train": train, "files": files, "store": store, "outside": outside}


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[RequestStore]:
    with RequestStore(tmp_path / "cache", "fake-image-model") as c:
        yield c


GOOD = ["a.jpg", "b.png", "c.jpg", "gray.png", "sub/d.png", "rotated.jpg", "coco2017:t.png"]


# ---------------------------------------------------------------------------- store


def test_resolve_roots_and_sha(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    files = coco["files"]
    assert store.read("a.jpg") == files["a.jpg"]
    assert store.read("coco2017:a.jpg") == files["a.jpg"]
    assert store.read("val2017:sub/d.png") == files["sub/d.png"]
    assert store.read("t.png") == files["t.png"]  # coco2017 falls back to train2017
    assert store.read("train2017:t.png") == files["t.png"]
    assert store.read("inside_link.png") == files["b.png"]  # a link inside the root is fine
    assert store.sha256("b.png") == hashlib.sha256(files["b.png"]).hexdigest()
    assert store.sha256("b.png") == store.sha256("inside_link.png")
    with pytest.raises(ImageError) as err:
        store.read("val2017:t.png")
    assert err.value.reason == "missing"


def test_env_and_default_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    val = tmp_path / "v"
    val.mkdir()
    (val / "x.png").write_bytes(_noise(4, 4, 0, "PNG"))
    monkeypatch.setenv(img_mod.COCO_VAL_ENV, str(val))
    assert ImageStore().read("x.png") == (val / "x.png").read_bytes()
    monkeypatch.delenv(img_mod.COCO_VAL_ENV)
    monkeypatch.setenv(img_mod.IMAGE_ROOT_ENV, str(tmp_path / "base"))
    assert ImageStore().roots["coco2017"] == (
        tmp_path / "base" / "coco" / "val2017",
        tmp_path / "base" / "coco" / "train2017",
    )
    monkeypatch.delenv(img_mod.IMAGE_ROOT_ENV)
    store = ImageStore(cache_root=tmp_path / "c")
    assert store.roots["val2017"] == (tmp_path / "c" / "images" / "coco" / "val2017",)


def test_missing_image_names_ref_roots_and_how_to_get_coco(coco: dict[str, Any]) -> None:
    with pytest.raises(ImageError) as err:
        coco["store"].read("000000222235.jpg")
    msg = str(err.value)
    assert err.value.reason == "missing" and err.value.skippable
    assert "000000222235.jpg" in msg
    assert str(coco["val"]) in msg and str(coco["train"]) in msg
    assert "lexsem download coco-val2017" in msg and img_mod.COCO_VAL_ENV in msg


@pytest.mark.parametrize(
    "ref",
    [
        "../outside.png",
        "coco2017:../outside.png",
        "sub/../../outside.png",
        "sub\\..\\..\\outside.png",
        "/etc/passwd",
        "coco2017:/etc/passwd",
        "escape.png",  # a symlink inside the root pointing outside it
        "val2017:escape.png",
        "a.jpg\x00.png",
    ],
)
def test_escapes_are_refused(coco: dict[str, Any], ref: str) -> None:
    with pytest.raises(ImageError) as err:
        coco["store"].read(ref)
    assert err.value.reason == "unsafe" and not err.value.skippable
    assert repr(ref) in str(err.value)


def test_escape_refused_even_when_skipping(coco: dict[str, Any]) -> None:
    enc = FakeImageEncoder()
    with pytest.raises(ImageError, match="outside its root"):
        embed_images(enc, ["a.jpg", "escape.png"], coco["store"], None, on_error="skip")
    assert enc.calls == 0


def test_unknown_root_and_bad_names(coco: dict[str, Any]) -> None:
    with pytest.raises(ImageError, match="unknown image root 'nope'") as err:
        coco["store"].read("nope:a.jpg")
    assert err.value.reason == "unknown-root"
    with pytest.raises(ValueError):
        coco["store"].add_root("mem", coco["val"])
    store = ImageStore(roots={"mine": [coco["train"], coco["val"]]}, default_root=None)
    assert store.read("mine:a.jpg") == coco["files"]["a.jpg"]
    with pytest.raises(ImageError, match="no ROOT: prefix"):
        store.read("a.jpg")


def test_store_pickles_with_roots_and_memory_images(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    ref = store.register_bytes("x/1", coco["files"]["b.png"])
    clone = pickle.loads(pickle.dumps(store))
    assert clone.roots == store.roots and clone.default_root == store.default_root
    assert clone.read(ref) == store.read(ref) and clone.read("a.jpg") == coco["files"]["a.jpg"]
    clone.add_root("more", coco["train"])  # the clone has a working lock of its own
    assert clone.read("more:t.png") == store.read("train2017:t.png")
    with pytest.raises(ImageError, match="refused"):
        clone.read("../secret.txt")


def test_memory_images(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    data = _noise(12, 12, 9, "PNG")
    ref = store.register_bytes("bivlc/0/img0", data)
    assert ref == "mem:bivlc/0/img0"
    assert store.read(ref) == data
    assert store.register_bytes("bivlc/0/img0", data) == ref  # same bytes: fine
    with pytest.raises(DataError, match="different bytes"):
        store.register_bytes("bivlc/0/img0", b"other")
    assert store.register_image("hf/1", {"bytes": data, "path": None}) == "mem:hf/1"
    pil_ref = store.register_image("hf/2", Image.open(io.BytesIO(data)))
    assert decode_image(store.read(pil_ref)).tobytes() == decode_image(data).tobytes()
    with pytest.raises(ImageError, match="no in-memory image") as err:
        store.read("mem:absent")
    assert err.value.reason == "missing"
    assert store.sha256(ref) == hashlib.sha256(data).hexdigest()


def test_path_only_records_are_read_under_their_root_only(coco: dict[str, Any]) -> None:
    """`register_image` with a datasets record holding a path and no bytes: the path goes
    through the checks of image references, under the root given; without a root, refused."""
    store: ImageStore = coco["store"]
    val = coco["val"]
    assert store.register_image("r/1", {"bytes": None, "path": "b.png"}, root=val) == "mem:r/1"
    assert store.read("mem:r/1") == coco["files"]["b.png"]
    escapes = {
        "../outside.png": r"'\.\.' component",
        str(coco["outside"]): "absolute",
        "/etc/shadow": "absolute",
        "escape.png": "outside its root",  # a link out of the folder
    }
    for path, why in escapes.items():
        with pytest.raises(ImageError, match=why) as err:
            store.register_image("r/2", {"bytes": None, "path": path}, root=val)
        assert err.value.reason == "unsafe"
    with pytest.raises(ImageError, match="no root folder was given") as err:
        store.register_image("r/3", {"bytes": None, "path": str(val / "b.png")})
    assert err.value.reason == "unsafe"
    with pytest.raises(ImageError, match="does not exist") as err:
        store.register_image("r/4", {"bytes": None, "path": "nope.png"}, root=val)
    assert err.value.reason == "missing"


# ---------------------------------------------------------------------------- embeddings


def test_embeddings_match_direct_computation_and_dedup(
    coco: dict[str, Any], cache: RequestStore
) -> None:
    store: ImageStore = coco["store"]
    enc = FakeImageEncoder()
    refs = [*GOOD, "dup.jpg", "a.jpg", "coco2017:a.jpg"]
    emb, stats, skipped = embed_images(enc, refs, store, cache, batch_size=3, num_workers=0)
    assert skipped == [] and emb.shape == (len(refs), 16) and emb.dtype == np.float32
    assert_close_to_reference(emb, np.stack([enc.direct(store.read(ref)) for ref in refs]))
    # a.jpg, dup.jpg (same bytes) and coco2017:a.jpg are one image: encoded once
    assert stats.n_refs == len(GOOD) + 2
    assert stats.n_unique == len(GOOD) == enc.n_encoded
    assert stats.n_encoded == len(GOOD) and stats.n_cached == 0
    assert len(cache) == len(GOOD)
    key = image_key(coco["files"]["a.jpg"])
    assert key == content_key("image", coco["files"]["a.jpg"])
    np.testing.assert_array_equal(cache.get_vectors([key])[key], emb[0])

    # EXIF orientation is applied: the 40×20 image is decoded upright as 20×40
    rotated = decode_image(coco["files"]["rotated.jpg"])
    assert rotated.size == (20, 40)
    assert decode_image(coco["files"]["rotated.jpg"], exif_transpose=False).size == (40, 20)

    # second run: everything from the cache, the encoder is never called
    enc2 = FakeImageEncoder()
    emb2, stats2, _ = embed_images(enc2, refs, store, cache, batch_size=3)
    assert enc2.calls == 0 and stats2.n_cached == len(GOOD) and stats2.n_encoded == 0
    np.testing.assert_array_equal(emb2, emb)


class FlakyEncoder(FakeImageEncoder):
    def encode_images(self, batch: torch.Tensor) -> np.ndarray:
        if self.calls == 1:
            raise RuntimeError("interrupted")
        return super().encode_images(batch)


def test_interrupted_run_resumes_from_committed_batches(
    coco: dict[str, Any], cache: RequestStore
) -> None:
    with pytest.raises(RuntimeError, match="interrupted"):
        embed_images(FlakyEncoder(), GOOD, coco["store"], cache, batch_size=3, num_workers=0)
    assert len(cache) == 3  # the first batch was committed
    enc = FakeImageEncoder()
    _, stats, _ = embed_images(enc, GOOD, coco["store"], cache, batch_size=3)
    assert stats.n_cached == 3 and enc.n_encoded == len(GOOD) - 3


def test_workers_give_identical_results(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    refs = [*GOOD, "dup.jpg"]
    e0, s0, _ = embed_images(FakeImageEncoder(), refs, store, None, batch_size=2, num_workers=0)
    e2, s2, _ = embed_images(FakeImageEncoder(), refs, store, None, batch_size=2, num_workers=2)
    assert s2.num_workers == 2 and s0.num_workers == 0
    np.testing.assert_array_equal(e0, e2)


@pytest.mark.parametrize("bad", ["truncated.jpg", "garbage.jpg"])
def test_undecodable_image_names_ref_and_item(coco: dict[str, Any], bad: str) -> None:
    enc = FakeImageEncoder()
    with pytest.raises(ImageError) as err:
        embed_images(
            enc,
            ["a.jpg", bad],
            coco["store"],
            None,
            labels={bad: "sugarcrepe/swap_obj#7"},
            num_workers=0,
        )
    assert err.value.reason == "undecodable"
    assert repr(bad) in str(err.value) and "sugarcrepe/swap_obj#7" in str(err.value)


def test_missing_image_in_embed_names_item(coco: dict[str, Any]) -> None:
    with pytest.raises(ImageError, match="item visla_generic#3") as err:
        embed_images(
            FakeImageEncoder(),
            ["a.jpg", "000000000001.jpg"],
            coco["store"],
            None,
            labels={"000000000001.jpg": "visla_generic#3"},
        )
    assert err.value.reason == "missing" and "000000000001.jpg" in str(err.value)


def test_skip_mode_counts_and_nans(coco: dict[str, Any], cache: RequestStore) -> None:
    enc = FakeImageEncoder()
    refs = ["a.jpg", "truncated.jpg", "b.png", "gone.jpg", "garbage.jpg", "truncated.jpg"]
    emb, stats, skipped = embed_images(
        enc, refs, coco["store"], cache, on_error="skip", batch_size=2, num_workers=2
    )
    assert skipped == ["truncated.jpg", "gone.jpg", "garbage.jpg"]
    assert stats.n_skipped == 3
    assert stats.skip_reasons == {"missing": 1, "undecodable": 2}
    assert np.isnan(emb[[1, 3, 4, 5]]).all()
    assert not np.isnan(emb[[0, 2]]).any()
    assert enc.n_encoded == 2 and len(cache) == 2  # nothing cached for the broken ones
    # all broken and nothing cached: the dimension is unknown
    emb3, _, skipped3 = embed_images(enc, ["gone.jpg"], coco["store"], None, on_error="skip")
    assert emb3.shape == (1, 0) and skipped3 == ["gone.jpg"]


def test_memory_and_file_images_share_one_encode(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    mem = store.register_bytes("winoground/0/image_0", coco["files"]["b.png"])
    enc = FakeImageEncoder()
    emb, stats, _ = embed_images(enc, [mem, "b.png"], store, None)
    assert enc.n_encoded == 1 and stats.n_unique == 1
    np.testing.assert_array_equal(emb[0], emb[1])


class LazyImages(dict):
    """A lazy ref -> bytes mapping like the one the Hugging Face loaders return."""

    def __init__(self, items: dict[str, bytes]) -> None:
        super().__init__(items)
        self.reads = 0

    def __getitem__(self, ref: str) -> bytes:
        self.reads += 1
        if ref.endswith("/broken"):
            raise DataError("bivlc: image field 'image' is empty (no bytes, no path)")
        return super().__getitem__(ref)


def test_lazy_mapping_images(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    lazy = LazyImages(
        {
            "mem:bivlc/test/0/image": coco["files"]["b.png"],
            "mem:bivlc/test/1/image": _noise(10, 7, 30, "PNG"),
            "mem:bivlc/test/2/broken": b"",
        }
    )
    store.add_mapping(lazy)
    assert lazy.reads == 0  # nothing is read when the mapping is added
    assert store.read("mem:bivlc/test/1/image") == lazy["mem:bivlc/test/1/image"]
    enc = FakeImageEncoder()
    refs = ["mem:bivlc/test/0/image", "mem:bivlc/test/1/image", "b.png"]
    emb, stats, _ = embed_images(enc, refs, store, None, num_workers=2, batch_size=1)
    assert stats.n_unique == 2 == enc.n_encoded
    np.testing.assert_array_equal(emb[0], emb[2])
    with pytest.raises(ImageError, match="is empty") as err:
        store.read("mem:bivlc/test/2/broken")
    assert err.value.reason == "unreadable"
    _, _, skipped = embed_images(enc, ["mem:bivlc/test/2/broken"], store, None, on_error="skip")
    assert skipped == ["mem:bivlc/test/2/broken"]


def test_many_refs_read_in_threads(coco: dict[str, Any]) -> None:
    store: ImageStore = coco["store"]
    refs = [store.register_bytes(f"m/{i}", _noise(6, 6, 100 + i % 20, "PNG")) for i in range(40)]
    enc = FakeImageEncoder()
    emb, stats, _ = embed_images(enc, [*refs, "a.jpg"], store, None, batch_size=8)
    assert stats.n_refs == 41 and stats.n_unique == 21 == enc.n_encoded
    np.testing.assert_array_equal(emb[0], emb[20])  # same seed, same bytes
    assert default_num_workers(8, 64, cuda=False) == 0
    assert default_num_workers(1000, 64, cuda=False) <= 2
    assert 1 <= default_num_workers(1000, 64, cuda=True) <= 8


def test_empty_refs() -> None:
    emb, stats, skipped = embed_images(FakeImageEncoder(), [], ImageStore(), None)
    assert emb.shape == (0, 0) and stats.n_refs == 0 and skipped == []


# ---------------------------------------------------------------------------- pair scores


def test_pair_scores(coco: dict[str, Any], tmp_path: Path) -> None:
    store: ImageStore = coco["store"]
    pairs = [
        ("a.jpg", "a cat"),
        ("a.jpg", "a dog on a mat"),
        ("dup.jpg", "a cat"),  # same bytes and text as the first: scored once
        ("b.png", "a cat"),
        ("sub/d.png", "x"),
        ("a.jpg", "a cat"),
    ]
    scorer = FakePairScorer()
    with RequestStore(tmp_path / "pc", "fake-pairs") as pcache:
        scores, stats, skipped = pair_scores(
            scorer, pairs, store, pcache, batch_size=2, num_workers=0
        )
        assert skipped == [] and scores.shape == (len(pairs),)
        for (ref, text), s in zip(pairs, scores, strict=True):
            assert_close_to_reference(s, scorer.direct(store.read(ref), text), scale=1.0)
        assert stats.n_unique == 4 and stats.n_scored == 4 and len(scorer.pairs) == 4
        assert stats.n_images == 3
        again = FakePairScorer()
        scores2, stats2, _ = pair_scores(again, pairs, store, pcache)
        assert again.pairs == [] and stats2.n_cached == 4
        np.testing.assert_array_equal(scores2, scores)

    skip_scores, skip_stats, skipped = pair_scores(
        FakePairScorer(),
        [("a.jpg", "t"), ("garbage.jpg", "t"), ("gone.jpg", "u")],
        store,
        on_error="skip",
        num_workers=2,
    )
    assert skipped == ["garbage.jpg", "gone.jpg"] and skip_stats.n_skipped == 2
    assert np.isnan(skip_scores[1:]).all() and not np.isnan(skip_scores[0])
    with pytest.raises(ImageError, match=r"garbage\.jpg"):
        pair_scores(FakePairScorer(), [("garbage.jpg", "t")], store)


# ---------------------------------------------------------------------------- download


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            if name.endswith("/"):
                zf.writestr(zipfile.ZipInfo(name), b"")
            else:
                zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, bytes], list[str]]]:
    """A 127.0.0.1 file server: (base url, {path: body}, [requested paths])."""
    bodies: dict[str, bytes] = {}
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            requests.append(self.path)
            body = bodies.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", bodies, requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _val_members() -> dict[str, bytes]:
    return {
        "val2017/": b"",
        "val2017/000000000139.jpg": _noise(16, 12, 10, "JPEG"),
        "val2017/000000000285.jpg": _noise(12, 16, 11, "JPEG"),
        "val2017/000000000632.jpg": _noise(14, 14, 12, "JPEG"),
        "__MACOSX/val2017/._000000000139.jpg": b"resource fork",
    }


def test_download_coco_from_local_server(
    server: tuple[str, dict[str, bytes], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, bodies, requests = server
    members = _val_members()
    blob = _zip(members)
    bodies["/zips/val2017.zip"] = blob
    archive = ImageArchive(
        name="coco-val2017",
        url=f"{base}/zips/val2017.zip",
        folder="coco/val2017",
        member_root="val2017",
        md5=hashlib.md5(blob).hexdigest(),
        sha256=hashlib.sha256(blob).hexdigest(),
        n_files=3,
    )
    monkeypatch.setitem(IMAGE_ARCHIVES, "coco-val2017", archive)
    cache_root = tmp_path / "cache"
    result = download_coco("val2017", cache_root=cache_root, offline=False, backoff=0.01)
    dest = cache_root / "images" / "coco" / "val2017"
    assert result.folder == dest and result.fresh and result.n_files == 3
    assert result.sha256 == hashlib.sha256(blob).hexdigest()
    assert sorted(p.name for p in dest.iterdir()) == [
        "000000000139.jpg",
        "000000000285.jpg",
        "000000000632.jpg",
    ]
    assert not (dest.parent / "val2017.zip").exists()  # the archive is removed once extracted
    leftovers = [p.name for p in dest.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []
    # the default store finds the images where the download put them
    store = ImageStore(cache_root=cache_root)
    assert store.read("000000000139.jpg") == members["val2017/000000000139.jpg"]
    # a second call finds the folder and touches nothing
    n = len(requests)
    again = download_coco("val2017", cache_root=cache_root, offline=True)
    assert not again.fresh and again.n_files == 3 and len(requests) == n


def test_download_checksum_mismatch_and_offline(
    server: tuple[str, dict[str, bytes], list[str]], tmp_path: Path
) -> None:
    base, bodies, _ = server
    bodies["/val2017.zip"] = _zip(_val_members())
    archive = ImageArchive(
        name="coco-val2017",
        url=f"{base}/val2017.zip",
        folder="coco/val2017",
        member_root="val2017",
        md5="0" * 32,
    )
    root = tmp_path / "images"
    with pytest.raises(DownloadError, match="expected md5"):
        download_archive(archive, image_root=root, offline=False, retries=1)
    assert sorted(p.name for p in (root / "coco").iterdir()) == ["val2017.lock"]
    with pytest.raises(DownloadError, match="offline") as err:
        download_archive(archive, image_root=root, offline=True)
    assert "--from-zip" in str(err.value)
    missing = ImageArchive("coco-val2017", f"{base}/absent.zip", "coco/val2017", "val2017")
    with pytest.raises(DownloadError, match="404"):
        download_archive(missing, image_root=root, offline=False, retries=1)


def test_local_zip_install(tmp_path: Path) -> None:
    blob = _zip(_val_members())
    zpath = tmp_path / "val2017.zip"
    zpath.write_bytes(blob)
    archive = ImageArchive(
        "coco-val2017",
        "http://invalid/",
        "coco/val2017",
        "val2017",
        md5=hashlib.md5(blob).hexdigest(),
    )
    res = download_archive(archive, image_root=tmp_path / "img", archive_file=zpath, offline=True)
    assert res.fresh and res.n_files == 3 and zpath.exists()  # a user's zip is kept


@pytest.mark.parametrize(
    "evil",
    ["val2017/../../evil.txt", "/tmp/evil-abs.txt", "../evil.txt", "val2017\\..\\..\\evil.txt"],
)
def test_zip_slip_refused(tmp_path: Path, evil: str) -> None:
    members = _val_members()
    members[evil] = b"owned"
    zpath = tmp_path / "evil.zip"
    zpath.write_bytes(_zip(members))
    archive = ImageArchive("coco-val2017", "http://invalid/", "coco/val2017", "val2017")
    root = tmp_path / "deep" / "images"
    with pytest.raises(DownloadError, match="zip-slip") as err:
        download_archive(archive, image_root=root, archive_file=zpath)
    assert repr(evil) in str(err.value)
    assert not (root / "coco" / "val2017").exists()
    assert [p.name for p in (root / "coco").iterdir()] == ["val2017.lock"]  # no temp folder
    assert not list(tmp_path.rglob("evil*.txt"))


def test_zip_symlink_member_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("val2017/ok.jpg", _noise(4, 4, 0, "JPEG"))
        link = zipfile.ZipInfo("val2017/link.jpg")
        link.external_attr = 0o120777 << 16  # S_IFLNK
        zf.writestr(link, "/etc/passwd")
    zpath = tmp_path / "links.zip"
    zpath.write_bytes(buf.getvalue())
    archive = ImageArchive("coco-val2017", "http://invalid/", "coco/val2017", "val2017")
    with pytest.raises(DownloadError, match="symbolic link"):
        download_archive(archive, image_root=tmp_path / "img", archive_file=zpath)


def test_registry_has_official_coco_archives() -> None:
    val = IMAGE_ARCHIVES["coco-val2017"]
    assert val.url == "http://images.cocodataset.org/zips/val2017.zip"
    assert val.member_root == "val2017" and val.n_files == 5000
    assert val.md5 is None or len(val.md5) == 32
    with pytest.raises(DownloadError, match="unknown COCO split"):
        download_coco("test2015")


# ---------------------------------------------------------------------------- file keys


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from lexsem.images.refs import ResolvedImage

    reads: list[str] = []
    real = ResolvedImage.read

    def counted(self: ResolvedImage) -> bytes:
        reads.append(self.ref)
        return real(self)

    monkeypatch.setattr(ResolvedImage, "read", counted)
    return reads


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: nothing remembered in memory."""
    from lexsem.engine import image_scan

    monkeypatch.setattr(image_scan, "_key_memo", {})


def test_unchanged_files_are_not_read_again_in_a_new_process(
    coco: dict[str, Any], cache: RequestStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image key of a file is remembered in the request store by what `os.stat` says of
    it (as git's index does); a write in place (same size, mtime set back) is still seen,
    through its ctime, and a fresh file is never remembered."""
    from lexsem.engine import image_scan

    monkeypatch.setattr(image_scan, "_SETTLE_S", 0.0)
    _new_process(monkeypatch)
    first, _, _ = embed_images(FakeImageEncoder(), GOOD, coco["store"], cache, num_workers=0)
    assert cache.count("records") == len(GOOD)
    reads = _count_reads(monkeypatch)
    _new_process(monkeypatch)
    enc = FakeImageEncoder()
    again, stats, _ = embed_images(enc, GOOD, coco["store"], cache, num_workers=0)
    assert reads == [] and stats.n_encoded == 0 and stats.n_cached == len(GOOD)
    np.testing.assert_array_equal(again, first)
    # rewrite one byte of b.png in place (same size), and set its mtime back
    path = coco["val"] / "b.png"
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(st.st_size // 2)
        byte = fh.read(1)
        fh.seek(st.st_size // 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    _new_process(monkeypatch)
    reads.clear()
    rgb = flag_profile(True)
    scan = image_scan.scan_images(
        coco["store"], GOOD, on_error="skip", labels=None, profile_of=lambda r: rgb, memo=cache
    )
    assert reads == ["b.png"]  # the only file read: its ctime changed
    assert scan.key_of["b.png"] == image_key(path.read_bytes())


def test_files_written_just_now_are_hashed_and_not_remembered(
    coco: dict[str, Any], cache: RequestStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.engine import image_scan

    # the fixture's files were written a moment ago; a slow machine may take longer than the
    # 2 s settling time to get here, so the test stretches it instead of racing the clock
    monkeypatch.setattr(image_scan, "_SETTLE_S", 3600.0)
    _new_process(monkeypatch)
    embed_images(FakeImageEncoder(), GOOD, coco["store"], cache, num_workers=0)
    assert cache.count("records") == 0
    reads = _count_reads(monkeypatch)
    _new_process(monkeypatch)
    embed_images(FakeImageEncoder(), GOOD, coco["store"], cache, num_workers=0)
    assert sorted(set(reads)) == sorted(set(GOOD))


SCENE_REF = "synthetic:small-red-ball.left_of.large-blue-box"


def _python(code: str, stdin: bytes = b"") -> str:
    out = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, check=True)
    return out.stdout.decode().strip()


def test_generated_roots_come_from_the_package_that_registers_them() -> None:
    """The image store imports no benchmark code: `synthetic:` is served once the benchmarks
    package (which registers it) is imported, not before."""
    code = (
        "import sys\n"
        "from lexsem.images.image_store import ImageStore\n"
        "from lexsem.images.refs import ImageError\n"
        "store = ImageStore()\n"
        "assert not [m for m in sys.modules if m.startswith('lexsem.benchmarks')]\n"
        "try:\n"
        f"    store.read({SCENE_REF!r})\n"
        "except ImageError as exc:\n"
        "    print(exc.reason)\n"
        "import lexsem.benchmarks\n"
        f"print(store.read({SCENE_REF!r})[:4] == b'\\x89PNG')\n"
    )
    assert _python(code).splitlines() == ["unknown-root", "True"]


def test_a_pickled_store_serves_generated_roots_in_a_fresh_process() -> None:
    from lexsem.benchmarks.sources.synthetic_images import synthetic_image_bytes

    code = (
        "import hashlib, pickle, sys\n"
        "store = pickle.loads(sys.stdin.buffer.read())\n"
        f"print(hashlib.sha256(store.read({SCENE_REF!r})).hexdigest())\n"
    )
    got = _python(code, pickle.dumps(ImageStore()))
    assert got == hashlib.sha256(synthetic_image_bytes(SCENE_REF)).hexdigest()

"""The pixel limit (`lexsem.images.pixels`): an image larger than it is refused before its pixels
are decoded, with lexsem's `ImageError` naming the image and the option — never Pillow's
decompression-bomb warning or error — in every decode path, and the option reaches the store
from `EvalConfig` and the CLI."""

from __future__ import annotations

import io
import json
import struct
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from builders.fakes import TinyDualEncoder, register_fixture_benchmark_with_images
from lexsem import evaluate
from lexsem.benchmarks.sources.hf_images import crop_png
from lexsem.config import EvalConfig, build_config
from lexsem.engine.image_embed import embed_images
from lexsem.engine.pair_scores import pair_scores
from lexsem.errors import LexsemError
from lexsem.images.decode import DEFAULT, HF_DATASETS, OPEN_CLIP_RAW, decode
from lexsem.images.image_store import ImageStore
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS, check_pixels, open_image
from lexsem.images.refs import SKIPPABLE, ImageError

pytestmark = pytest.mark.torch


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def bomb_png(width: int, height: int) -> bytes:
    """A valid 1-bit black PNG of width × height pixels: tens of kilobytes on disk, a byte per
    pixel once Pillow decodes it, three once converted to RGB."""
    row = b"\x00" + bytes((width + 7) // 8)  # filter byte + packed bits
    body = zlib.compress(row * height, 9)
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", body) + _chunk(b"IEND", b"")
    )


def small_png(width: int, height: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


class PixelEncoder:
    """preprocess: a 4×4 RGB tensor; the embedding is that tensor, flattened."""

    name = "pixel-encoder"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-pixels"}

    def preprocess(self, image: Any) -> torch.Tensor:
        arr = np.asarray(image.convert("RGB").resize((4, 4)), dtype=np.float32) / 255.0
        return torch.from_numpy(arr).permute(2, 0, 1).contiguous()

    def encode_images(self, batch: torch.Tensor) -> np.ndarray:
        return batch.reshape(batch.shape[0], -1).numpy()


class PixelScorer(PixelEncoder):
    def score(self, images: torch.Tensor, texts: list[str]) -> np.ndarray:
        return images.reshape(images.shape[0], -1).mean(dim=1).numpy().astype(np.float64)


def _no_bomb_warning(caught: list[warnings.WarningMessage]) -> None:
    bombs = [w for w in caught if issubclass(w.category, Image.DecompressionBombWarning)]
    assert bombs == [], [str(w.message) for w in bombs]


# ---------------------------------------------------------------------------- decoding


def test_the_default_limit_fits_the_benchmarks_and_stays_below_pillows() -> None:
    # COCO 640×640, Visual Genome / BiVLC about 1 MP, Winoground a few MP; camera photos pass
    assert 36_000_000 <= DEFAULT_MAX_IMAGE_PIXELS < Image.MAX_IMAGE_PIXELS
    assert "too-large" in SKIPPABLE


@pytest.mark.parametrize("side", [12000, 30000])  # 30000²: beyond Pillow's own error threshold
@pytest.mark.parametrize("profile", [DEFAULT, HF_DATASETS, OPEN_CLIP_RAW], ids=lambda p: p.name)
def test_a_huge_image_is_refused_by_lexsem_not_by_pillow(side: int, profile: Any) -> None:
    data = bomb_png(side, side)
    assert len(data) < 200_000  # tiny on disk
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ImageError) as err:
            decode(data, profile, ref="coco2017:bomb.png")
    _no_bomb_warning(caught)
    assert err.value.reason == "too-large" and err.value.skippable
    msg = str(err.value)
    assert f"'coco2017:bomb.png' is {side}×{side} = {side * side:,} pixels" in msg
    assert f"limit of {DEFAULT_MAX_IMAGE_PIXELS:,}" in msg
    assert "--max-image-pixels" in msg and "--skip-bad-images" in msg


def test_the_limit_is_checked_on_the_header_before_decoding() -> None:
    image = open_image(small_png(40, 30), max_pixels=1200)
    assert image.size == (40, 30) and image.format == "PNG"
    assert image.tile  # header read, the pixels still to decode (`load` empties `tile`)
    with pytest.raises(ImageError, match="40×30 = 1,200 pixels, more than the limit of 1,199"):
        open_image(small_png(40, 30), max_pixels=1199)


@pytest.mark.parametrize(
    ("size", "memory"),
    [
        ((10, 10), "900 bytes"),  # 3 bands × 3 copies × 100 pixels
        ((16, 10), "1.4 KiB"),
        ((40, 30), "11 KiB"),
        ((200, 200), "352 KiB"),
        ((1000, 1000), "8.6 MiB"),
        ((12000, 12000), "1.2 GiB"),
    ],
)
def test_the_too_large_error_says_the_memory_in_a_readable_unit(
    size: tuple[int, int], memory: str
) -> None:
    """Never `about 0 MiB` for a small limit: bytes, KiB, MiB or GiB, whichever reads best."""
    with pytest.raises(ImageError) as err:
        check_pixels(size, 1, "x.png")
    assert f"(decoding it would take about {memory});" in str(err.value)


def test_open_image_opens_what_pillow_opens() -> None:
    rng = np.random.default_rng(1)
    arr = rng.integers(0, 256, (9, 7, 3), dtype=np.uint8)
    for fmt in ("PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP"):
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, fmt)
        ours, theirs = open_image(buf.getvalue(), 10_000), Image.open(buf)
        assert (ours.format, ours.mode, ours.size) == (theirs.format, theirs.mode, theirs.size)
        assert ours.convert("RGB").tobytes() == theirs.convert("RGB").tobytes(), fmt
    with pytest.raises(Image.UnidentifiedImageError):
        open_image(b"not an image", 10_000)


def test_a_raised_limit_applies_as_given_even_above_pillows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # Pillow would warn at 100, fail at 200
    data = small_png(40, 50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        image = decode(data, DEFAULT, max_pixels=2000)
    _no_bomb_warning(caught)
    assert image.size == (40, 50)
    with pytest.raises(ImageError, match="more than the limit of 1,999"):
        decode(data, DEFAULT, max_pixels=1999)


# ---------------------------------------------------------------------------- the engine


def _store(max_pixels: int | None = None) -> ImageStore:
    store = ImageStore(max_pixels=max_pixels)
    store.register_bytes("small", small_png(20, 10))
    store.register_bytes("big", bomb_png(12000, 12000))
    return store


@pytest.mark.parametrize("workers", [0, 1])
def test_embed_images_names_the_image_its_item_and_the_option(workers: int) -> None:
    with pytest.raises(ImageError) as err:
        embed_images(
            PixelEncoder(),
            ["mem:small", "mem:big"],
            _store(),
            None,
            labels={"mem:big": "bivlc/replace_obj#4"},
            num_workers=workers,
        )
    assert err.value.reason == "too-large"
    msg = str(err.value)
    assert "'mem:big'" in msg and "bivlc/replace_obj#4" in msg and "--max-image-pixels" in msg


def test_skip_bad_images_skips_and_counts_too_large_images() -> None:
    emb, stats, skipped = embed_images(
        PixelEncoder(), ["mem:small", "mem:big"], _store(), None, on_error="skip", num_workers=0
    )
    assert skipped == ["mem:big"] and stats.skip_reasons == {"too-large": 1}
    assert not np.isnan(emb[0]).any() and np.isnan(emb[1]).all()
    scores, pst, skipped2 = pair_scores(
        PixelScorer(),
        [("mem:small", "a"), ("mem:big", "b")],
        _store(),
        on_error="skip",
        num_workers=0,
    )
    assert skipped2 == ["mem:big"] and pst.skip_reasons == {"too-large": 1}
    assert np.isfinite(scores[0]) and np.isnan(scores[1])


def test_the_store_limit_is_what_the_engine_applies() -> None:
    store = _store(max_pixels=199)  # small.png is 20×10 = 200 pixels
    assert store.max_pixels == 199 and store.describe()["max_pixels"] == 199
    with pytest.raises(ImageError, match="20×10 = 200 pixels, more than the limit of 199"):
        embed_images(PixelEncoder(), ["mem:small"], store, None, num_workers=0)
    emb, _, _ = embed_images(PixelEncoder(), ["mem:small"], _store(200), None, num_workers=0)
    assert emb.shape == (1, 48)
    assert ImageStore().max_pixels == DEFAULT_MAX_IMAGE_PIXELS
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_pixels must be a positive integer"):
            ImageStore(max_pixels=bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- ARO crops


class CropMapping(dict):
    """A lazy mapping that decodes to serve its bytes, like the ARO VG store (crops)."""

    def read_limited(self, ref: str, max_pixels: int) -> bytes:
        return crop_png(self[ref], (0.0, 0.0, 5.0, 5.0), max_pixels=max_pixels, ref=ref)


def test_aro_crops_respect_the_limit_of_the_store() -> None:
    big = small_png(40, 30)
    with pytest.raises(ImageError, match="'mem:aro/0' is 40×30 = 1,200 pixels"):
        crop_png(big, (0.0, 0.0, 5.0, 5.0), max_pixels=1000, ref="mem:aro/0")
    with pytest.raises(ImageError, match="5000×5000 = 25,000,000 pixels"):  # a box too large
        crop_png(big, (0.0, 0.0, 5000.0, 5000.0), max_pixels=1_000_000, ref="mem:aro/0")
    store = ImageStore(max_pixels=1000)
    store.add_mapping(CropMapping({"mem:aro/0": big}))
    with pytest.raises(ImageError) as err:
        store.read("mem:aro/0")
    assert err.value.reason == "too-large"  # the mapping's verdict, not "unreadable"
    _, stats, skipped = embed_images(
        PixelEncoder(), ["mem:aro/0"], store, None, on_error="skip", num_workers=0
    )
    assert skipped == ["mem:aro/0"] and stats.skip_reasons == {"too-large": 1}
    raised = ImageStore(max_pixels=1200)
    raised.add_mapping(CropMapping({"mem:aro/0": big}))
    assert Image.open(io.BytesIO(raised.read("mem:aro/0"))).size == (5, 5)


# ---------------------------------------------------------------------------- the option


def test_eval_config_field_and_validation() -> None:
    assert EvalConfig(benchmarks="x").max_image_pixels == DEFAULT_MAX_IMAGE_PIXELS
    assert EvalConfig(benchmarks="x", max_image_pixels=5).max_image_pixels == 5
    with pytest.raises(LexsemError, match="max_image_pixels"):
        build_config(benchmarks="x", max_image_pixels=0)


def test_cli_option_reaches_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    import lexsem.evaluator as evaluator_mod
    from lexsem.cli import app

    seen: list[EvalConfig] = []

    class Stop(LexsemError):
        pass

    class Capture:
        def __init__(self, config: EvalConfig, **_: Any) -> None:
            seen.append(config)

        def run(self, *a: Any, **k: Any) -> Any:
            raise Stop("captured")

    monkeypatch.setattr(evaluator_mod, "Evaluator", Capture)
    runner = CliRunner()
    args = ["eval", "-m", "x", "-b", "synthetic", "-o", "unused"]
    out = runner.invoke(app, [*args, "--max-image-pixels", "1234"])
    assert "captured" in out.output and seen[-1].max_image_pixels == 1234
    runner.invoke(app, args)
    assert seen[-1].max_image_pixels == DEFAULT_MAX_IMAGE_PIXELS
    bad = runner.invoke(app, [*args, "--max-image-pixels", "0"])
    assert bad.exit_code != 0 and len(seen) == 2


def test_evaluate_refuses_or_skips_and_records_images_over_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    common: dict[str, Any] = {
        "tasks": ["itt"],
        "data_dir": data,
        "coco_val2017": images,
        "n_boot": 0,
        "num_workers": 0,
        "max_image_pixels": 2500,
    }
    with pytest.raises(ImageError) as err:
        evaluate(TinyDualEncoder(), ["fixture_pp"], **common)
    assert "2.jpg" in str(err.value) and "--max-image-pixels" in str(err.value)
    out = tmp_path / "run"
    run = evaluate(TinyDualEncoder(), ["fixture_pp"], skip_bad_images=True, out=out, **common)
    assert run.record.benchmarks[0].skipped == {"swap_obj": ["2"]}
    assert run.record.timings.n_images_skipped == 1
    assert run.record.timings.image_skip_reasons == {"too-large": 1}  # why, in run.json too
    from lexsem.report.tables import coverage_summary

    assert coverage_summary(run.record) == (
        "coverage below 100%: fixture_pp ITT 4 of 5 items scored (images skipped: 1 over the "
        "pixel limit (--max-image-pixels))"
    )
    saved = json.loads((out / "run.json").read_text())["config"]
    assert saved["evaluation"]["max_image_pixels"] == 2500
    raised = evaluate(TinyDualEncoder(), ["fixture_pp"], **{**common, "max_image_pixels": 2700})
    assert raised.record.benchmarks[0].skipped == {}

"""Decode profiles against the reference scripts' order of operations, re-implemented here.

Generated RGBA, CMYK, greyscale (L), palette (P) and EXIF-rotated files go
through lexsem's pipeline (`embed_images` / `pair_scores`: read, hash, decode, the model's
preprocess) with a model whose preprocess is open_clip's eval transform (Resize, CenterCrop,
convert to RGB, ToTensor, Normalize) and whose "embedding" is the preprocessed tensor itself, so
each row can be compared exactly with the reference computed here:

- SugarCrepe (RAIVNLab/sugar-crepe, main_eval.py) and SugarCrepe++ (Sri-Harsha/scpp,
  VLMs/test_Variants_CLIP.py): ``transform(Image.open(path))`` — raw mode, converted to RGB by
  the transform after the crop, no EXIF rotation;
- BiVLC (IMirandaM/BiVLC, src/CLIP_fine_tuning/CLIP_utils.py) and Winoground's CLIP example:
  a `datasets` Image feature (EXIF orientation applied), ``.convert("RGB")``, the transform;
- ARO (mertyg/vision-language-models-are-bows, dataset_zoo/aro_datasets.py):
  ``Image.open(path).convert("RGB")``, the transform.

Each check also shows that the other order gives other pixels where the difference is real
(greyscale is the one case where both orders agree).

16-bit greyscale files (I;16, I) are the one place where lexsem departs from the references on
purpose: Pillow's conversion clips them to nearly white, lexsem scales them to 8 bits in every
profile (`lexsem.images.depth`); they are checked against a hand computation at the end.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as TF

from builders.backends import require_module
from lexsem.engine.image_embed import embed_images
from lexsem.engine.keys import content_key, image_key
from lexsem.engine.pair_scores import pair_scores
from lexsem.engine.request_store import RequestStore
from lexsem.images.decode import (
    DEFAULT,
    HF_DATASETS,
    OPEN_CLIP_RAW,
    PRESETS,
    DecodeProfile,
    accepts_raw_mode,
    decode,
    decode_image,
    flag_profile,
    get_profile,
    profile_lookup,
)
from lexsem.images.image_store import ImageStore

pytestmark = pytest.mark.torch

SIZE = 24
MEAN = (0.48145466, 0.4578275, 0.40821073)  # open_clip's OPENAI_DATASET_MEAN / STD
STD = (0.26862954, 0.26130258, 0.27577711)
H, W = 30, 40  # landscape: the EXIF rotation (orientation 6) makes it portrait


# ---------------------------------------------------------------------------- generated files


def _save(image: Image.Image, fmt: str, **kwargs: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def _files() -> dict[str, bytes]:
    rng = np.random.default_rng(7)
    palette = Image.fromarray(rng.integers(0, 256, (H, W), dtype=np.uint8)).convert("P")
    palette.putpalette([int(v) for v in rng.integers(0, 256, 768)])
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to display
    return {
        # transparency varies per pixel: open_clip resizes RGBA premultiplied, then drops alpha
        "RGBA": _save(Image.fromarray(rng.integers(0, 256, (H, W, 4), dtype=np.uint8)), "PNG"),
        # a K channel: CMYK -> RGB clips (255 - C - K), so it does not commute with resizing
        "CMYK": _save(
            Image.fromarray(rng.integers(0, 256, (H, W, 4), dtype=np.uint8), "CMYK"), "JPEG"
        ),
        "L": _save(Image.fromarray(rng.integers(0, 256, (H, W), dtype=np.uint8), "L"), "PNG"),
        "P": _save(palette, "PNG"),  # PIL resizes palette images with NEAREST
        "EXIF": _save(
            Image.fromarray(rng.integers(0, 256, (H, W, 3), dtype=np.uint8)),
            "JPEG",
            exif=exif.tobytes(),
        ),
    }


FILES = _files()
RAW_DIFFERS = ("RGBA", "CMYK", "P")  # converting before the transform changes pixels


def test_files_decode_to_the_intended_modes() -> None:
    modes = {name: Image.open(io.BytesIO(data)).mode for name, data in FILES.items()}
    assert modes == {"RGBA": "RGBA", "CMYK": "CMYK", "L": "L", "P": "P", "EXIF": "RGB"}
    assert Image.open(io.BytesIO(FILES["EXIF"])).getexif()[0x0112] == 6


# ---------------------------------------------------------------------------- references


def _clip_tail(image: Image.Image, *, rgb_after: bool) -> torch.Tensor:
    """open_clip's eval transform, step by step (transform.py, image_transform: Resize to the
    shortest edge, bicubic; CenterCrop; then convert('RGB'); ToTensor; Normalize)."""
    image = TF.resize(image, SIZE, interpolation=InterpolationMode.BICUBIC)
    image = TF.center_crop(image, [SIZE, SIZE])
    if rgb_after:
        image = image.convert("RGB")
    return TF.normalize(TF.to_tensor(image), MEAN, STD)


def sugarcrepe_reference(data: bytes) -> np.ndarray:
    """RAIVNLab/sugar-crepe main_eval.py: ``transform(Image.open(path))``."""
    return _clip_tail(Image.open(io.BytesIO(data)), rgb_after=True).numpy().ravel()


def aro_reference(data: bytes) -> np.ndarray:
    """mertyg/vision-language-models-are-bows aro_datasets.py: ``Image.open(p).convert('RGB')``,
    then the model's preprocess."""
    return _clip_tail(Image.open(io.BytesIO(data)).convert("RGB"), rgb_after=True).numpy().ravel()


def datasets_style_reference(data: bytes) -> np.ndarray:
    """`datasets` Image.decode_example (>= 2.19.0) as documented: open, load, exif_transpose when
    an Orientation tag is present; then BiVLC's ``.convert("RGB")`` and the preprocess."""
    image = Image.open(io.BytesIO(data))
    image.load()
    if image.getexif().get(0x0112) is not None:
        image = ImageOps.exif_transpose(image)
    return _clip_tail(image.convert("RGB"), rgb_after=True).numpy().ravel()


# ---------------------------------------------------------------------------- models


def _to_rgb(image: Image.Image) -> Image.Image:
    return image.convert("RGB")


class TransformEncoder:
    """preprocess: open_clip's eval transform (any PIL mode, RGB after the crop); the image
    "embedding" is the preprocessed tensor, flattened. `raw`: declares ``accepts_raw_mode``."""

    name = "transform-encoder"

    def __init__(self, raw: bool) -> None:
        self.accepts_raw_mode = raw
        self.n_encoded = 0

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-transform"}

    def preprocess(self, image: Image.Image) -> torch.Tensor:
        return _clip_tail(image, rgb_after=True)

    def encode_images(self, batch: torch.Tensor) -> np.ndarray:
        self.n_encoded += int(batch.shape[0])
        return batch.reshape(batch.shape[0], -1).numpy()


class TransformScorer(TransformEncoder):
    """A pair scorer over the same preprocess: score = mean of the preprocessed pixels."""

    def score(self, images: torch.Tensor, texts: list[str]) -> np.ndarray:
        return images.reshape(images.shape[0], -1).mean(dim=1).numpy().astype(np.float64)


@pytest.fixture
def store() -> ImageStore:
    s = ImageStore()
    for name, data in FILES.items():
        s.register_bytes(name, data)
    return s


def _embed(model: Any, store: ImageStore, names: list[str], **kwargs: Any) -> np.ndarray:
    emb, _, skipped = embed_images(
        model, [f"mem:{n}" for n in names], store, None, num_workers=0, **kwargs
    )
    assert skipped == []
    return emb


# ---------------------------------------------------------------------------- the presets


def test_presets_are_frozen_picklable_and_cite_their_reference() -> None:
    assert set(PRESETS) == {"default", "open_clip_raw", "hf_datasets"}
    assert (DEFAULT.exif_transpose, DEFAULT.rgb) == (False, "first")
    assert (OPEN_CLIP_RAW.exif_transpose, OPEN_CLIP_RAW.rgb) == (False, "model")
    assert (HF_DATASETS.exif_transpose, HF_DATASETS.rgb) == (True, "first")
    assert "RAIVNLab/sugar-crepe" in OPEN_CLIP_RAW.reference
    assert "Sri-Harsha/scpp" in OPEN_CLIP_RAW.reference
    assert "IMirandaM/BiVLC" in HF_DATASETS.reference and "2.19" in HF_DATASETS.reference
    assert "mertyg/vision-language-models-are-bows" in DEFAULT.reference
    for p in PRESETS.values():
        assert pickle.loads(pickle.dumps(p)) == p
        assert get_profile(p.name) is p and get_profile(p) is p
    with pytest.raises(FrozenInstanceError):
        OPEN_CLIP_RAW.rgb = "first"  # type: ignore[misc]
    with pytest.raises(ValueError, match="rgb must be"):
        DecodeProfile("x", exif_transpose=False, rgb="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="known: default, hf_datasets, open_clip_raw"):
        get_profile("open_clip")


def test_each_benchmark_declares_the_profile_of_its_reference() -> None:
    from lexsem.benchmarks import catalog as registry

    expected = {
        "sugarcrepe": "open_clip_raw",  # RAIVNLab/sugar-crepe main_eval.py
        "sugarcrepe_pp": "open_clip_raw",  # Sri-Harsha/scpp VLMs/test_Variants_CLIP.py
        "visla_generic": "open_clip_raw",  # assumed: no public evaluation code
        "visla_spatial": "open_clip_raw",
        "bivlc": "hf_datasets",  # IMirandaM/BiVLC CLIP_utils.py, datasets 2.19.2
        "winoground": "hf_datasets",  # load_dataset + .convert("RGB")
        "aro_vg": "default",  # mertyg/... aro_datasets.py: Image.open(p).convert('RGB')
        "aro_order": "default",
        "synthetic": "default",
        "synthetic_bi": "default",
    }
    declared = {name: registry.get(name).decode for name in registry.names()}
    assert {k: declared.get(k) for k in expected} == expected
    assert all(get_profile(name) for name in declared.values())


def test_for_model_and_with_exif() -> None:
    assert OPEN_CLIP_RAW.for_model(True) is OPEN_CLIP_RAW
    assert OPEN_CLIP_RAW.for_model(False).rgb == "first"
    assert DEFAULT.for_model(True) is DEFAULT  # "first" stays first
    forced = OPEN_CLIP_RAW.with_exif(True)
    assert forced.name == "open_clip_raw+exif" and forced.exif_transpose and forced.rgb == "model"
    assert HF_DATASETS.with_exif(False).name == "hf_datasets-exif"
    assert HF_DATASETS.with_exif(True) is HF_DATASETS
    assert flag_profile(True).key_tag == HF_DATASETS.key_tag == b""
    assert OPEN_CLIP_RAW.describe() == {
        "name": "open_clip_raw",
        "exif_transpose": False,
        "rgb": "model",
    }


def test_decode_keeps_the_raw_mode_only_for_model_profiles() -> None:
    for name, data in FILES.items():
        raw = decode(data, OPEN_CLIP_RAW)
        assert raw.mode == Image.open(io.BytesIO(data)).mode, name
        assert decode(data, DEFAULT).mode == "RGB"
        assert decode(data, DEFAULT).tobytes() == decode_image(data, exif_transpose=False).tobytes()
    assert decode(FILES["EXIF"], HF_DATASETS).size == (H, W)  # upright: 30 wide, 40 high
    assert decode(FILES["EXIF"], DEFAULT).size == (W, H)
    assert decode(FILES["EXIF"], OPEN_CLIP_RAW.with_exif(True)).size == (H, W)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("empty", "it is empty (0 bytes)"),
        ("text", "UnidentifiedImageError: cannot identify image file"),
        ("truncated", "OSError: "),
    ],
)
def test_bytes_that_are_no_image_are_an_image_error_naming_them(damage: str, says: str) -> None:
    """Whatever Pillow raises for bytes it cannot decode, every profile raises lexsem's
    `ImageError` (`undecodable`), the one error the engine skips and the explorer shows."""
    from lexsem.images.refs import ImageError

    png = FILES["P"]
    data = {"empty": b"", "text": b"not an image\n", "truncated": png[: len(png) // 2]}[damage]
    for profile in PRESETS.values():
        with pytest.raises(ImageError) as err:
            decode(data, profile, ref="x.png")
        assert err.value.reason == "undecodable", profile.name
        assert str(err.value).startswith(f"image 'x.png' cannot be decoded: {says}")
    with pytest.raises(ImageError):
        decode_image(data)


# ---------------------------------------------------------------------------- per benchmark


@pytest.mark.parametrize("name", list(FILES))
def test_open_clip_raw_follows_the_sugarcrepe_scripts(store: ImageStore, name: str) -> None:
    ours = _embed(TransformEncoder(raw=True), store, [name], profiles="open_clip_raw")[0]
    reference = sugarcrepe_reference(FILES[name])
    np.testing.assert_array_equal(ours, reference)
    converted_first = aro_reference(FILES[name])
    if name in RAW_DIFFERS:
        assert np.abs(reference - converted_first).max() > 0.05
    else:  # greyscale, RGB: both orders give the same pixels
        np.testing.assert_array_equal(reference, converted_first)
    if name == "EXIF":  # no EXIF rotation in these scripts
        assert np.abs(reference - datasets_style_reference(FILES[name])).max() > 0.05


@pytest.mark.parametrize("name", list(FILES))
def test_hf_datasets_follows_the_datasets_decode(store: ImageStore, name: str) -> None:
    ours = _embed(TransformEncoder(raw=True), store, [name], profiles=HF_DATASETS)[0]
    np.testing.assert_array_equal(ours, datasets_style_reference(FILES[name]))
    if name == "EXIF":
        assert np.abs(ours - aro_reference(FILES[name])).max() > 0.05


def test_hf_datasets_matches_the_datasets_package_itself() -> None:
    datasets = require_module("datasets")
    feature = datasets.Image()
    for name, data in FILES.items():
        theirs = feature.decode_example({"bytes": data, "path": None}).convert("RGB")
        ours = decode(data, HF_DATASETS)
        assert ours.size == theirs.size and ours.tobytes() == theirs.tobytes(), name


@pytest.mark.parametrize("name", list(FILES))
def test_default_follows_the_aro_script(store: ImageStore, name: str) -> None:
    ours = _embed(TransformEncoder(raw=True), store, [name], profiles=DEFAULT)[0]
    np.testing.assert_array_equal(ours, aro_reference(FILES[name]))


def test_a_model_without_raw_mode_gets_rgb_first(store: ImageStore) -> None:
    """SugarCrepe++'s transformers / LAVIS scripts convert first; several transformers image
    processors refuse other modes. A model that does not declare raw input gets RGB."""
    names = list(FILES)
    rgb_model = TransformEncoder(raw=False)
    assert not accepts_raw_mode(rgb_model) and not accepts_raw_mode(object())
    ours = _embed(rgb_model, store, names, profiles="open_clip_raw")
    for row, name in zip(ours, names, strict=True):
        np.testing.assert_array_equal(row, aro_reference(FILES[name]))


def test_mapping_of_profiles_and_exif_override(store: ImageStore) -> None:
    model = TransformEncoder(raw=True)
    refs = ["mem:RGBA", "mem:EXIF"]
    both = {"mem:RGBA": OPEN_CLIP_RAW, "mem:EXIF": "hf_datasets"}
    emb, _, _ = embed_images(model, refs, store, None, num_workers=2, batch_size=1, profiles=both)
    np.testing.assert_array_equal(emb[0], sugarcrepe_reference(FILES["RGBA"]))
    np.testing.assert_array_equal(emb[1], datasets_style_reference(FILES["EXIF"]))
    # a run-wide override forces EXIF off for every profile (and on, below)
    off = _embed(
        model, store, ["EXIF"], profiles=both | {"mem:EXIF": HF_DATASETS}, exif_transpose=False
    )
    np.testing.assert_array_equal(off[0], aro_reference(FILES["EXIF"]))
    on = _embed(model, store, ["EXIF"], profiles="open_clip_raw", exif_transpose=True)
    np.testing.assert_array_equal(on[0], datasets_style_reference(FILES["EXIF"]))
    with pytest.raises(ValueError, match="no decode profile given for image 'mem:L'"):
        _embed(model, store, ["RGBA", "L"], profiles={"mem:RGBA": DEFAULT})


def test_profile_lookup_without_profiles_is_the_old_flag() -> None:
    assert profile_lookup(None, None, True)("x") == flag_profile(True)
    assert profile_lookup(None, False, True)("x") == DEFAULT
    assert profile_lookup("open_clip_raw", None, False)("x").rgb == "first"
    assert profile_lookup({"x": "open_clip_raw"}, True, True)("x").name == "open_clip_raw+exif"


def test_pair_scores_follow_the_profile(store: ImageStore) -> None:
    scorer = TransformScorer(raw=True)
    pairs = [("mem:P", "a"), ("mem:P", "b")]
    raw, _, _ = pair_scores(scorer, pairs, store, profiles="open_clip_raw", num_workers=0)
    first, _, _ = pair_scores(scorer, pairs, store, profiles="default", num_workers=0)
    assert raw[0] == pytest.approx(float(sugarcrepe_reference(FILES["P"]).mean()), abs=1e-6)
    assert first[0] == pytest.approx(float(aro_reference(FILES["P"]).mean()), abs=1e-6)
    assert abs(raw[0] - first[0]) > 1e-3


# ---------------------------------------------------------------------------- cache keys


def test_each_decode_variant_has_its_own_cache_key() -> None:
    data = FILES["RGBA"]
    keys = {
        image_key(data, profile=p)
        for p in (DEFAULT, HF_DATASETS, OPEN_CLIP_RAW, OPEN_CLIP_RAW.with_exif(True))
    }
    assert len(keys) == 4
    # the RGB-first keys are those of the old exif_transpose flag: existing caches keep serving
    assert image_key(data) == content_key("image", data) == image_key(data, profile=HF_DATASETS)
    assert image_key(data, exif_transpose=False) == image_key(data, profile=DEFAULT)
    assert image_key(data, profile=DEFAULT) == content_key(
        "image", b"lexsem:no-exif-transpose\x00" + data
    )
    # the key depends on how the image is decoded, not on the profile's name
    renamed = DecodeProfile("sugarcrepe", exif_transpose=False, rgb="model")
    assert image_key(data, profile=renamed) == image_key(data, profile=OPEN_CLIP_RAW)


def test_two_decodes_never_share_a_cache_row(store: ImageStore, tmp_path: Path) -> None:
    refs = [f"mem:{n}" for n in FILES]
    with RequestStore(tmp_path / "c", "transform") as cache:
        raw_model = TransformEncoder(raw=True)
        a, _, _ = embed_images(raw_model, refs, store, cache, profiles="open_clip_raw")
        b, st, _ = embed_images(raw_model, refs, store, cache, profiles="default")
        assert st.n_cached == 0 and raw_model.n_encoded == 2 * len(refs)
        again, st2, _ = embed_images(raw_model, refs, store, cache, profiles="open_clip_raw")
        assert st2.n_cached == len(refs)
        np.testing.assert_array_equal(again, a)
        # a model that takes RGB decodes open_clip_raw as default: the same rows serve both
        rgb_model = TransformEncoder(raw=False)
        c, st3, _ = embed_images(rgb_model, refs, store, cache, profiles="open_clip_raw")
        assert st3.n_cached == len(refs) and rgb_model.n_encoded == 0
        np.testing.assert_array_equal(c, b)


# ---------------------------------------------------------------------------- lexsem's backends


def test_openclip_backend_takes_raw_mode_like_the_sugarcrepe_script() -> None:
    """The real `openclip:` preprocess (no weights needed) on raw-mode images equals the
    reference order at its own size (224, bicubic, OpenAI mean/std)."""
    require_module("open_clip")
    from lexsem.models.backends.openclip.encoder import OpenClipEncoder

    enc = OpenClipEncoder("openclip:ViT-B-32-quickgelu/openai")
    assert accepts_raw_mode(enc) and not enc.loaded

    def reference(data: bytes) -> torch.Tensor:
        image = TF.resize(Image.open(io.BytesIO(data)), 224, InterpolationMode.BICUBIC)
        image = TF.center_crop(image, [224, 224]).convert("RGB")
        return TF.normalize(TF.to_tensor(image), MEAN, STD)

    for name in RAW_DIFFERS:
        ours = enc.preprocess(decode(FILES[name], OPEN_CLIP_RAW.for_model(accepts_raw_mode(enc))))
        assert torch.equal(ours, reference(FILES[name])), name


def test_transformers_backends_get_rgb() -> None:
    """lexsem's transformers backends do not declare raw input: their processors either convert
    to RGB themselves or refuse other modes (e.g. FLAVA's, below), and SugarCrepe++'s scripts for
    these models convert first."""
    transformers = require_module("transformers")
    from lexsem.models.backends.clip import Blip2ITCScorer, HFDualEncoder
    from lexsem.models.backends.itm import HFITMScorer

    for cls in (HFDualEncoder, Blip2ITCScorer, HFITMScorer):
        assert not accepts_raw_mode(cls)
    flava = transformers.FlavaImageProcessorPil(
        size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32}
    )
    rgba = Image.open(io.BytesIO(FILES["RGBA"]))
    with pytest.raises(ValueError):
        flava(images=rgba, return_tensors="pt")
    assert (
        flava(images=decode(FILES["RGBA"], DEFAULT), return_tensors="pt")["pixel_values"].shape[1]
        == 3
    )


# ---------------------------------------------------------------------------- 16-bit greyscale

# 16-bit values and their 8-bit values worked out by hand: the high byte, floor(v / 256)
SIXTEEN = [0, 255, 256, 4095, 32767, 32768, 65280, 65535]
EIGHT = [0, 0, 1, 15, 127, 128, 255, 255]
ALL_PROFILES = (DEFAULT, HF_DATASETS, OPEN_CLIP_RAW, OPEN_CLIP_RAW.with_exif(True))


def _png16(values: list[int], rows: int = 2) -> bytes:
    data = _save(Image.fromarray(np.array([values] * rows, dtype=np.uint16)), "PNG")
    assert Image.open(io.BytesIO(data)).mode == "I;16"
    return data


def _pixels(image: Image.Image) -> list[list[int]]:
    """Per channel, the first row of `image`: [[values of channel 0], ...]."""
    arr = np.asarray(image)
    arr = arr[..., None] if arr.ndim == 2 else arr
    return [arr[0, :, c].tolist() for c in range(arr.shape[2])]


@pytest.mark.parametrize("profile", ALL_PROFILES, ids=lambda p: p.name)
def test_16_bit_png_is_scaled_not_clipped_in_every_profile(profile: DecodeProfile) -> None:
    image = decode(_png16(SIXTEEN), profile.for_model(True))
    assert image.mode == ("L" if profile.rgb == "model" else "RGB")
    assert all(channel == EIGHT for channel in _pixels(image))
    # what Pillow alone gives: every value above 255 clipped to white
    clipped = Image.open(io.BytesIO(_png16(SIXTEEN))).convert("RGB")
    assert _pixels(clipped)[0] == [0, 255, 255, 255, 255, 255, 255, 255]


@pytest.mark.parametrize(
    ("mode", "values", "expected"),
    [
        ("I", [-5, 0, 300, 65535, 70000], [0, 0, 1, 255, 255]),  # clipped to 0..65535 first
        ("I;16B", [0, 256, 513, 65535], [0, 1, 2, 255]),
    ],
)
def test_other_16_bit_modes_are_scaled(mode: str, values: list[int], expected: list[int]) -> None:
    dtype = {"I": "<i4", "I;16B": ">u2"}[mode]
    raw = np.array([values, values], dtype=dtype).tobytes()
    data = _save(Image.frombytes(mode, (len(values), 2), raw), "TIFF")
    assert Image.open(io.BytesIO(data)).mode == mode
    for profile in ALL_PROFILES:
        assert all(c == expected for c in _pixels(decode(data, profile.for_model(True))))


def test_16_bit_through_the_pipeline_matches_the_scaled_reference() -> None:
    """embed_images / pair_scores with a raw-mode model and an RGB model, every profile: the
    preprocessed pixels are those of the reference transform on the hand-scaled 8-bit image."""
    rng = np.random.default_rng(3)
    values = rng.integers(0, 65536, (H, W), dtype=np.uint16)
    store = ImageStore()
    ref = store.register_bytes("sixteen", _save(Image.fromarray(values), "PNG"))
    scaled = Image.fromarray((values // 256).astype(np.uint8))
    expected = _clip_tail(scaled, rgb_after=True).numpy().ravel()
    for raw in (True, False):
        for profile in ALL_PROFILES:
            emb = _embed(TransformEncoder(raw=raw), store, ["sixteen"], profiles=profile)[0]
            np.testing.assert_allclose(emb, expected, atol=1e-6)
        scores, _, _ = pair_scores(
            TransformScorer(raw=raw), [(ref, "t")], store, profiles=OPEN_CLIP_RAW, num_workers=0
        )
        assert scores[0] == pytest.approx(float(expected.mean()), abs=1e-5)


def test_aro_crop_of_a_16_bit_image_is_scaled() -> None:
    from lexsem.benchmarks.sources.hf_images import crop_png

    cropped = Image.open(io.BytesIO(crop_png(_png16(SIXTEEN), (2.0, 0.0, 4.0, 1.0))))
    assert cropped.mode == "RGB" and cropped.size == (4, 1)
    assert all(channel == EIGHT[2:6] for channel in _pixels(cropped))

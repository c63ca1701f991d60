"""The `clip:` backend (transformers dual encoders) against a direct transformers computation.

Every family is a tiny randomly initialised model built here (1–2 layers, hidden 32, 32×32
images, a tiny tokenizer written here, the family's image processor set to 32×32), saved with
save_pretrained and loaded back through the spec string.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers as T
from PIL import Image
from torch.utils.data import DataLoader, default_collate

from builders.numeric import BF16_RTOL, assert_close_to_reference
from builders.tiny_dual_models import (
    CHARS,
    GEMMA_IDS,
    _save,
    _tower,
    _vit,
    direct_tokens,
    gemma_tokenizer,
    write_clip,
    write_siglip,
)
from builders.tiny_text_models import TEXTS, VOCAB, WORDS, wordpiece_tokenizer, write_tiny_bert
from lexsem.errors import ModelError
from lexsem.models.aliases import ALIASES
from lexsem.models.backends.clip import Blip2ITCScorer, HFDualEncoder, supported_model_types
from lexsem.models.factory import (
    describe,
    load_image_encoder,
    load_pair_scorer,
    load_text_encoder,
)
from lexsem.models.protocols import ImageEncoder, PairScorer, TextEncoder, fingerprint_key
from lexsem.models.spec import parse_model_spec

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

LONG = " ".join(["a red ball and a blue box"] * 12)  # past every tiny model's text limit
ALL_TEXTS = [*TEXTS, LONG]
DUAL = ["clip", "siglip", "siglip2", "align", "altclip", "flava", "blip"]


# -- tiny tokenizers ----------------------------------------------------------------------------
def bert_tokenizer(folder: Path) -> Any:
    return wordpiece_tokenizer(folder, VOCAB)


def xlmr_tokenizer() -> Any:
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("<mask>", 0.0)]
    pieces += [("▁" + w, -2.0) for w in WORDS] + [("▁", -3.0)] + [(c, -5.0) for c in CHARS]
    return T.XLMRobertaTokenizer(vocab=pieces)


def write_siglip2(folder: Path, seed: int = 0) -> Path:
    tok = gemma_tokenizer("Siglip2Tokenizer")
    torch.manual_seed(seed)
    cfg = T.Siglip2Config(
        text_config=_tower(vocab_size=len(tok), max_position_embeddings=64, **GEMMA_IDS),
        vision_config=_tower(patch_size=8, num_patches=16),
    )
    proc = T.Siglip2ImageProcessorPil(patch_size=8, max_num_patches=16)
    return _save(folder, T.Siglip2Model(cfg), tok, proc)


def write_align(folder: Path, seed: int = 0) -> Path:
    tok = bert_tokenizer(folder)
    torch.manual_seed(seed)
    cfg = T.AlignConfig(
        text_config=_tower(vocab_size=len(tok), max_position_embeddings=80),
        vision_config=dict(
            image_size=32,
            width_coefficient=0.5,
            depth_coefficient=0.5,
            kernel_sizes=[3, 3],
            in_channels=[32, 16],
            out_channels=[16, 32],
            strides=[1, 2],
            num_block_repeats=[1, 1],
            expand_ratios=[1, 2],
            depthwise_padding=[],
            hidden_dim=16,
        ),
        projection_dim=16,
    )
    proc = T.EfficientNetImageProcessorPil(
        size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32}
    )
    return _save(folder, T.AlignModel(cfg), tok, proc)


def write_altclip(folder: Path, seed: int = 0) -> Path:
    tok = xlmr_tokenizer()
    torch.manual_seed(seed)
    cfg = T.AltCLIPConfig(
        text_config=_tower(
            vocab_size=len(tok), max_position_embeddings=26, pad_token_id=1, project_dim=24
        ),
        vision_config=_vit(),
        projection_dim=16,
    )
    proc = T.CLIPImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    )
    return _save(folder, T.AltCLIPModel(cfg), tok, proc)


def write_flava(folder: Path, seed: int = 0) -> Path:
    tok = bert_tokenizer(folder)
    torch.manual_seed(seed)
    cfg = T.FlavaConfig(
        image_config=_vit(),
        text_config=_tower(vocab_size=len(tok), max_position_embeddings=80),
        multimodal_config=_tower(num_hidden_layers=1),
        hidden_size=32,
        projection_dim=16,
    )
    proc = T.FlavaImageProcessorPil(
        size={"height": 32, "width": 32}, crop_size={"height": 32, "width": 32}
    )
    return _save(folder, T.FlavaModel(cfg), tok, proc)


def write_blip(folder: Path, seed: int = 0, cls: str = "BlipForImageTextRetrieval") -> Path:
    tok = bert_tokenizer(folder)
    torch.manual_seed(seed)
    cfg = T.BlipConfig(
        text_config=_tower(vocab_size=len(tok), max_position_embeddings=64, encoder_hidden_size=32),
        vision_config=_vit(),
        projection_dim=16,
        image_text_hidden_size=16,
    )
    proc = T.BlipImageProcessorPil(size={"height": 32, "width": 32})
    return _save(folder, getattr(T, cls)(cfg), tok, proc)


def write_blip2(folder: Path, seed: int = 0) -> Path:
    tok = bert_tokenizer(folder)
    torch.manual_seed(seed)
    cfg = T.Blip2Config(
        vision_config=_vit(),
        qformer_config=_tower(
            vocab_size=len(tok),
            max_position_embeddings=64,
            encoder_hidden_size=32,
            cross_attention_frequency=1,
            use_qformer_text_input=True,  # as in blip2-itm-vit-g: the Q-Former reads text
        ),
        text_config=dict(
            model_type="opt",
            vocab_size=len(tok),
            hidden_size=16,
            num_hidden_layers=1,
            ffn_dim=16,
            num_attention_heads=2,
            word_embed_proj_dim=16,
        ),
        num_query_tokens=4,
        image_text_hidden_size=16,
    )
    proc = T.BlipImageProcessorPil(size={"height": 32, "width": 32})
    return _save(folder, T.Blip2ForImageTextRetrieval(cfg), tok, proc)


WRITERS: dict[str, Callable[..., Path]] = {
    "clip": write_clip,
    "siglip": write_siglip,
    "siglip2": write_siglip2,
    "align": write_align,
    "altclip": write_altclip,
    "flava": write_flava,
    "blip": write_blip,
    "blip2": write_blip2,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dual")
    return {family: write(root / family) for family, write in WRITERS.items()}


def images() -> list[Image.Image]:
    """Three distinct RGB images of different sizes: a reddish gradient, bluish noise, and a
    green/black checkerboard."""
    rng = np.random.default_rng(0)
    grad = np.zeros((40, 50, 3), dtype=np.uint8)
    grad[..., 0] = np.linspace(80, 255, 50, dtype=np.uint8)[None, :]
    grad[..., 1] = np.linspace(0, 120, 40, dtype=np.uint8)[:, None]
    noise = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    noise[..., 2] = 230
    board = np.zeros((64, 20, 3), dtype=np.uint8)
    board[(np.arange(64)[:, None] // 4 + np.arange(20)[None, :] // 4) % 2 == 0, 1] = 255
    return [Image.fromarray(a) for a in (grad, noise, board)]


def spec(folder: Path, **options: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in options.items())
    return f"clip:{folder}" + (f"?{query}" if query else "")


# -- the direct computation, per family ---------------------------------------------------------
MODEL_CLASS = {
    "clip": "CLIPModel",
    "siglip": "SiglipModel",
    "siglip2": "Siglip2Model",
    "align": "AlignModel",
    "altclip": "AltCLIPModel",
    "flava": "FlavaModel",
    "blip": "BlipForImageTextRetrieval",
    "blip2": "Blip2ForImageTextRetrieval",
}


def _features(out: Any) -> torch.Tensor:
    return out if isinstance(out, torch.Tensor) else out.pooler_output


def direct(
    family: str, folder: Path, texts: list[str], imgs: list[Image.Image], **kw: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Text and image embeddings straight from transformers, as the family's docs show."""
    model = getattr(T, MODEL_CLASS[family]).from_pretrained(str(folder)).eval()
    proc = T.AutoImageProcessor.from_pretrained(str(folder), backend="pil")
    px = dict(proc(images=imgs, return_tensors="pt"))
    enc = direct_tokens(family, folder, texts, **kw)
    with torch.no_grad():
        if family == "blip":
            text = model.text_proj(model.text_encoder(**enc).last_hidden_state[:, 0, :])
            vision = model.vision_model(pixel_values=px["pixel_values"]).last_hidden_state
            image = model.vision_proj(vision[:, 0, :])
            # the model's own ITC scores are the cosines of these embeddings
            itc = model(**enc, pixel_values=px["pixel_values"], use_itm_head=False).itm_score
            t = torch.nn.functional.normalize(text, dim=-1)
            i = torch.nn.functional.normalize(image, dim=-1)
            assert_close_to_reference(i @ t.T, itc, scale=1.0)
        else:
            text = _features(model.get_text_features(**enc))
            image = _features(model.get_image_features(**px))
            if family == "flava":  # every token projected; the CLS token's is the embedding
                text, image = text[:, 0, :], image[:, 0, :]
    return text.numpy(), image.numpy()


def ours(enc: Any, imgs: list[Image.Image]) -> np.ndarray:
    return enc.encode_images(default_collate([enc.preprocess(im) for im in imgs]))


def _min_distance(emb: np.ndarray) -> float:
    """The smallest distance between two rows, after normalising (emb: (n, d) or (n, q, d))."""
    x = emb.reshape(emb.shape[0], -1)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    d = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    return float(d[~np.eye(len(x), dtype=bool)].min())


# -- embeddings against transformers ------------------------------------------------------------
@pytest.mark.parametrize("family", DUAL)
def test_embeddings_match_transformers(family: str, models: dict[str, Path]) -> None:
    folder = models[family]
    enc = load_text_encoder(spec(folder), device="cpu")
    assert type(enc) is HFDualEncoder and enc.family.name == family
    assert isinstance(enc, TextEncoder) and isinstance(enc, ImageEncoder)
    assert not isinstance(enc, PairScorer)
    imgs = images()
    want_text, want_image = direct(family, folder, ALL_TEXTS, imgs)
    got_text = enc.encode(ALL_TEXTS)
    assert got_text.dtype == np.float32 and got_text.flags.c_contiguous
    assert_close_to_reference(got_text, want_text)
    got_image = ours(enc, imgs)
    assert got_image.dtype == np.float32 and got_image.shape == want_image.shape
    assert_close_to_reference(got_image, want_image)
    # the embeddings depend on the input (the test would be vacuous otherwise)
    assert _min_distance(got_image) > 1e-3 and _min_distance(got_text) > 1e-3
    # text and image share one space: same dimension, raw (not normalised)
    assert got_text.shape[1] == got_image.shape[1]
    assert not np.allclose(np.linalg.norm(got_text, axis=1), 1.0)
    # small batches give the same text embeddings (each text on its own is padded the same way)
    assert_close_to_reference(enc.encode(ALL_TEXTS, batch_size=2), got_text)
    assert enc.text_length == len(direct_tokens(family, folder, [LONG])["input_ids"][0])


def test_siglip_preprocessing(models: dict[str, Path]) -> None:
    enc = load_text_encoder(spec(models["siglip"]), device="cpu")
    enc.encode(["x"])
    batch = enc.tokenize(enc.format_texts(["A Cat."]))
    assert set(batch) == {"input_ids"}  # no padding mask, as trained
    assert batch["input_ids"].shape == (1, 64)  # padded to max_length 64
    # the tokenizer is case-sensitive (GemmaTokenizer): no <unk> shows the text was lowercased
    assert type(enc._tokenizer).__name__ == "GemmaTokenizer"
    assert enc._tokenizer("A")["input_ids"] == [enc._tokenizer.unk_token_id]
    assert enc._tokenizer.unk_token_id not in batch["input_ids"][0].tolist()
    np.testing.assert_array_equal(enc.encode(["A CAT."]), enc.encode(["a cat."]))
    assert enc.fingerprint["text"]["lowercase"] is True
    assert enc.fingerprint["text"]["attention_mask"] is False


def test_siglip2_naflex_inputs(models: dict[str, Path]) -> None:
    enc = load_image_encoder(spec(models["siglip2"]), device="cpu")
    x = enc.preprocess(images()[2])
    assert set(x) == {"pixel_values", "pixel_attention_mask", "spatial_shapes"}
    assert x["pixel_values"].shape == (16, 3 * 8 * 8) and x["spatial_shapes"].shape == (2,)
    assert not enc.loaded


def test_blip2_itc_scores_match_transformers(models: dict[str, Path]) -> None:
    folder = models["blip2"]
    enc = load_text_encoder(spec(folder), device="cpu")
    assert type(enc) is Blip2ITCScorer and enc.family.name == "blip2"
    assert isinstance(enc, TextEncoder) and isinstance(enc, PairScorer)
    assert not isinstance(enc, ImageEncoder)  # an image is 4 query vectors, not one
    assert load_pair_scorer(spec(folder)).family.name == "blip2"
    with pytest.raises(ModelError, match="not an image encoder; use load_pair_scorer"):
        load_image_encoder(spec(folder))
    imgs = images()
    texts = ALL_TEXTS[:3]
    model = T.Blip2ForImageTextRetrieval.from_pretrained(str(folder)).eval()
    px = T.AutoImageProcessor.from_pretrained(str(folder), backend="pil")(
        images=imgs, return_tensors="pt"
    )["pixel_values"]
    tok = direct_tokens("blip2", folder, ALL_TEXTS)
    with torch.no_grad():
        out = model(pixel_values=px, **tok, use_image_text_matching_head=False)
    got = enc.encode(ALL_TEXTS)
    got_n = got / np.linalg.norm(got, axis=1, keepdims=True)
    assert_close_to_reference(got_n, out.text_embeds.numpy())
    batch = default_collate([enc.preprocess(im) for im in imgs])
    queries = enc.encode_image_queries(batch)
    assert queries.shape == (3, 4, 16)
    assert _min_distance(queries) > 1e-3 and _min_distance(got) > 1e-3
    queries_n = queries / np.linalg.norm(queries, axis=2, keepdims=True)
    assert_close_to_reference(queries_n, out.image_embeds.numpy())
    # score(images[i], texts[i]) is the model's ITC logit for that pair (max over queries)
    assert_close_to_reference(enc.score(batch, texts), np.diag(out.logits_per_image.numpy()[:, :3]))
    pairs = default_collate([enc.preprocess(imgs[i]) for i in (2, 2, 0)])
    want = out.logits_per_image.numpy()[[2, 2, 0], [0, 4, 5]]
    assert_close_to_reference(enc.score(pairs, [ALL_TEXTS[0], ALL_TEXTS[4], ALL_TEXTS[5]]), want)
    with pytest.raises(ModelError, match="3 images for 2 texts"):
        enc.score(batch, texts[:2])


# -- lazy loading, fingerprints, pickling -------------------------------------------------------
def test_lazy_loading_and_describe(models: dict[str, Path]) -> None:
    enc = load_text_encoder(spec(models["clip"]), device="cpu")
    fp = enc.fingerprint
    info = describe(spec(models["clip"]), device="cpu")
    assert info["family"] == "clip" and info["backend"] == "clip"
    assert not enc.loaded and "not loaded" in repr(enc)
    enc.preprocess(images()[0])  # the image processor only: no weights
    assert not enc.loaded and enc.text_length is None
    enc.encode(["a cat"])
    assert enc.loaded and enc.fingerprint == fp
    enc2 = load_text_encoder(spec(models["clip"]), device="cpu")
    ours(enc2, images())  # encode_images loads too
    assert enc2.loaded
    assert enc2.encode([]).shape == (0, 16)


def test_fingerprint(models: dict[str, Path], tmp_path: Path) -> None:
    def key(s: str, **kw: Any) -> str:
        return fingerprint_key(load_text_encoder(s, **kw).fingerprint)

    base = spec(models["clip"])
    fp = load_text_encoder(base).fingerprint
    assert fp["backend"] == "clip" and fp["family"] == "clip"
    assert fp["model_class"] == "CLIPModel" and fp["dtype"] == "fp32"
    assert fp["model"]["source"] == "local"
    assert fp["text"] == {
        "padding": "longest",
        "padding_side": "right",
        "default_max_length": None,
        "roberta_positions": False,
        "lowercase": False,
        "attention_mask": True,
    }
    assert fp["image"] == {
        "processor": "AutoImageProcessor",
        "backend": "pil",
        "inputs": ["pixel_values"],
    }
    assert key(base) == key(base)  # stable
    copy = shutil.copytree(models["clip"], tmp_path / "moved")
    assert key(spec(copy)) == key(base)  # content-addressed
    assert key(base + "?max_length=8") != key(base)
    assert key(base, max_length=8) == key(base + "?max_length=8")
    assert key(base + "?dtype=bf16") != key(base)
    assert key(base + "?template=a+photo+of+{text}") != key(base)
    other = write_clip(tmp_path / "other", seed=1)  # other weights
    assert key(spec(other)) != key(base)
    fams = {fingerprint_key(load_text_encoder(spec(p)).fingerprint) for p in models.values()}
    assert len(fams) == len(models)
    s2 = load_text_encoder(spec(models["siglip2"])).fingerprint
    assert s2["family"] == "siglip2" and s2["text"]["default_max_length"] == 64
    assert s2["image"]["inputs"] == ["pixel_values", "pixel_attention_mask", "spatial_shapes"]


class _Images:
    def __init__(self, imgs: list[Image.Image], preprocess: Callable[[Any], Any]) -> None:
        self.imgs = imgs
        self.preprocess = preprocess

    def __len__(self) -> int:
        return len(self.imgs)

    def __getitem__(self, i: int) -> Any:
        return self.preprocess(self.imgs[i])


def _equal(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _equal(a[k], b[k])
        return
    assert isinstance(a, torch.Tensor) and a.device.type == "cpu"
    torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("family", [*DUAL, "blip2"])
def test_preprocess_pickles_and_runs_in_dataloader_workers(
    family: str, models: dict[str, Path]
) -> None:
    enc = load_text_encoder(spec(models[family]), device="cpu")
    imgs = images()
    enc.encode(["a cat"])  # loaded: pickling must still leave the weights behind
    blob = pickle.dumps(enc.preprocess)
    assert len(blob) < 200_000
    clone = pickle.loads(blob)
    assert not clone.__self__.loaded and enc.loaded
    want = [enc.preprocess(im) for im in imgs]
    for w, im in zip(want, imgs, strict=True):
        _equal(clone(im), w)
        _equal(pickle.loads(pickle.dumps(w)), w)
        assert (w["pixel_values"] if isinstance(w, dict) else w).dtype == torch.float32
    loader = DataLoader(_Images(imgs, enc.preprocess), batch_size=2, num_workers=2)
    batches = list(loader)
    assert len(batches) == 2
    _equal(batches[0], default_collate(want[:2]))
    _equal(batches[1], default_collate(want[2:]))
    if isinstance(enc, HFDualEncoder):
        got = np.concatenate([enc.encode_images(b) for b in batches])
        assert_close_to_reference(got, ours(enc, imgs))


def test_preprocess_in_spawned_workers(models: dict[str, Path]) -> None:
    """Spawned workers (macOS/Windows default) receive the encoder by pickle, without weights."""
    enc = load_image_encoder(spec(models["siglip2"]), device="cpu")
    imgs = images()
    enc.encode(["a cat"])
    loader = DataLoader(
        _Images(imgs, enc.preprocess), batch_size=3, num_workers=1, multiprocessing_context="spawn"
    )
    (batch,) = list(loader)
    _equal(batch, default_collate([enc.preprocess(im) for im in imgs]))


# -- options and errors -------------------------------------------------------------------------
def test_max_length_and_template(models: dict[str, Path]) -> None:
    folder = models["clip"]
    imgs = images()
    enc = load_text_encoder(spec(folder, max_length="6"), device="cpu")
    want, _ = direct("clip", folder, ALL_TEXTS, imgs, max_length=6)
    assert_close_to_reference(enc.encode(ALL_TEXTS), want)
    assert enc.text_length == 6
    tmpl = load_text_encoder(spec(folder, template="a+photo+of+{text}"), device="cpu")
    want, _ = direct("clip", folder, ["a photo of " + t for t in TEXTS], imgs)
    assert_close_to_reference(tmpl.encode(TEXTS), want)
    with pytest.raises(ModelError, match="max_length=30 exceeds the model's 24 text positions"):
        load_text_encoder(spec(folder, max_length="30"), device="cpu").encode(["a cat"])


def test_bf16(models: dict[str, Path]) -> None:
    enc = load_text_encoder(spec(models["siglip"], dtype="bf16"), device="cpu")
    ref = load_text_encoder(spec(models["siglip"]), device="cpu")
    assert enc.dtype == "bf16"
    got = enc.encode(TEXTS)
    assert got.dtype == np.float32
    assert_close_to_reference(got, ref.encode(TEXTS), rtol=BF16_RTOL)
    assert ours(enc, images()).dtype == np.float32


def test_unsupported_model_type(tmp_path: Path) -> None:
    bert = write_tiny_bert(tmp_path / "bert")
    with pytest.raises(ModelError) as err:
        load_text_encoder(f"clip:{bert}")
    msg = str(err.value)
    assert "model_type 'bert'" in msg
    assert "clip, siglip, siglip2, align, altclip, flava, blip, blip-2" in msg
    assert supported_model_types() == [
        "clip", "siglip", "siglip2", "align", "altclip", "flava", "blip", "blip-2",
    ]  # fmt: skip
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelError, match=r"has no config\.json"):
        load_text_encoder(f"clip:{tmp_path / 'empty'}")
    # a text-only backend is not an image encoder
    with pytest.raises(ModelError, match="text-only, not an image encoder"):
        load_image_encoder(f"hf:{bert}")


def test_blip_checkpoints_without_itc_weights_are_refused(
    models: dict[str, Path], tmp_path: Path
) -> None:
    caption = shutil.copytree(models["blip"], tmp_path / "caption")
    cfg = json.loads((caption / "config.json").read_text())
    cfg["architectures"] = ["BlipForConditionalGeneration"]
    (caption / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match=r"BlipForConditionalGeneration checkpoint.*ITC"):
        load_text_encoder(spec(caption))
    # no architectures recorded, and the weights lack the ITC projections: refused at load
    plain = write_blip(tmp_path / "plain", cls="BlipModel")
    cfg = json.loads((plain / "config.json").read_text())
    del cfg["architectures"]
    (plain / "config.json").write_text(json.dumps(cfg))
    enc = load_text_encoder(spec(plain), device="cpu")
    with pytest.raises(ModelError, match=r"lacks weights .*(vision_proj|text_proj)"):
        enc.encode(["a cat"])


def test_spec_options_and_aliases() -> None:
    s = parse_model_spec("clip:org/m?max_length=16&dtype=fp16&revision=v1&trust_remote_code=true")
    assert (s.backend, s.max_length, s.dtype, s.revision, s.trust_remote_code) == (
        "clip", 16, "fp16", "v1", True,
    )  # fmt: skip
    for bad, match in [
        ("clip:org/m?pooling=cls", "does not apply to backend 'clip'"),
        ("clip:org/m?normalize=true", "does not apply to backend 'clip'"),
        ("clip:", "empty NAME"),
    ]:
        with pytest.raises(ModelError, match=match):
            parse_model_spec(bad)
    want = {
        "clip-b32": "openai/clip-vit-base-patch32",
        "clip-l14": "openai/clip-vit-large-patch14",
        "siglip-b16": "google/siglip-base-patch16-224",
        "align-base": "kakaobrain/align-base",
        "altclip": "BAAI/AltCLIP",
        "flava": "facebook/flava-full",
        "blip-itc": "Salesforce/blip-itm-base-coco",
        "blip2-itc": "Salesforce/blip2-itm-vit-g",
    }
    for alias, name in want.items():
        a = parse_model_spec(alias)
        assert (a.backend, a.name, a.alias) == ("clip", name, alias)
        assert ALIASES.get(alias).spec == f"clip:{name}"


@pytest.mark.parametrize("family", DUAL)
def test_preprocess_uses_the_pil_image_processor(models: dict[str, Path], family: str) -> None:
    """Preprocessing never goes through torchvision (transformers' default "fast" processors
    when it is installed): PIL only, CPU-only and picklable, like the reference pipelines."""
    enc = load_image_encoder(spec(models[family]), device="cpu")
    proc = enc.image_processor
    assert type(proc).__name__.endswith("Pil"), type(proc).__name__
    assert "torchvision" not in type(proc).__module__
    clone = pickle.loads(pickle.dumps(enc.preprocess))
    _equal(clone(images()[0]), enc.preprocess(images()[0]))


@pytest.mark.parametrize("family", ["clip", "altclip", "siglip"])
def test_batch_order(family: str, models: dict[str, Path]) -> None:
    enc = load_text_encoder(spec(models[family]), device="cpu")
    texts = [TEXTS[2], LONG, TEXTS[0], TEXTS[1]]
    order = enc.batch_order(texts).tolist()
    if enc.family.padding == "max_length":  # one width for every batch: character order
        assert order == sorted(range(4), key=lambda i: -len(texts[i]))
    else:  # the tokenizer's counts, capped at the family's length
        mask = direct_tokens(family, models[family], texts)["attention_mask"]
        counts = [int(n) for n in mask.sum(1)]
        assert order == sorted(range(4), key=lambda i: -counts[i])
        assert counts[1] == enc.text_length  # LONG is truncated, so it still comes first

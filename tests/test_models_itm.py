"""The `itm:` pair scorers (FLAVA, BLIP, BLIP-2, ViLT image-text matching heads), checked on tiny
randomly initialised models built here, against the same computation done directly with
transformers (processor + model forward + head)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders.numeric import FP32_RTOL, assert_close_to_reference
from builders.tiny_itm_models import IMAGE, INIT, VOCAB, H, _tokenizer, _tower, write_tiny_blip
from lexsem.errors import ModelError
from lexsem.models import source as S
from lexsem.models.backends.itm import FAMILIES, HFITMScorer
from lexsem.models.protocols import PairScorer, fingerprint_key

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

TEXTS = [
    "a cat",
    "a small red dog chases the big blue ball on the table",
    "dogs",
    "the man rides a horse",
    "a box on a table and a cat on the box",
]
# (image index, text index): consecutive repeats of an image, as the engine sends them
PAIRS = [(0, 0), (0, 1), (1, 2), (2, 3), (2, 4), (3, 1), (1, 0)]

# -- tiny models -----------------------------------------------------------------------------------


def _images() -> list[Image.Image]:
    """RGB noise images of different sizes and aspect ratios (ViLT keeps the aspect ratio)."""
    rng = np.random.default_rng(0)
    sizes = [(40, 30), (24, 64), (50, 50), (64, 20)]  # (width, height)
    return [
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB") for w, h in sizes
    ]


def write_tiny_flava(folder: Path, seed: int = 0) -> Path:
    from transformers import (
        FlavaConfig,
        FlavaForPreTraining,
        FlavaImageProcessorPil,
        FlavaProcessor,
    )

    config = FlavaConfig(
        image_config={**_tower(), "image_size": IMAGE, "patch_size": 8, "vocab_size": 16},
        text_config={**_tower(), "vocab_size": len(VOCAB), "max_position_embeddings": 64},
        multimodal_config=_tower(1),
        hidden_size=H,
        projection_dim=16,
        init_codebook=False,
        initializer_range=INIT,
    )
    torch.manual_seed(seed)
    FlavaForPreTraining(config).eval().save_pretrained(folder)
    size = {"height": IMAGE, "width": IMAGE}
    image_processor = FlavaImageProcessorPil(size=size, crop_size=size)
    FlavaProcessor(image_processor, _tokenizer(folder)).save_pretrained(folder)
    return folder


def write_tiny_blip2(folder: Path, seed: int = 0, *, image_tokens: bool = True) -> Path:
    """image_tokens: the current transformers layout (the processor prepends `<image>` tokens,
    the config names their id); else the older one (neither)."""
    from transformers import (
        Blip2Config,
        Blip2ForImageTextRetrieval,
        Blip2Processor,
        BlipImageProcessorPil,
    )

    n_query = 4
    tok = _tokenizer(folder)
    processor = Blip2Processor(
        BlipImageProcessorPil(size={"height": IMAGE, "width": IMAGE}),
        tok,
        num_query_tokens=n_query if image_tokens else None,
    )
    config = Blip2Config(
        vision_config={**_tower(), "image_size": IMAGE, "patch_size": 8},
        qformer_config={
            **_tower(),
            "vocab_size": len(tok),
            "max_position_embeddings": 64,
            "encoder_hidden_size": H,
            "cross_attention_frequency": 1,
            "use_qformer_text_input": True,  # as in Salesforce/blip2-itm-vit-g
        },
        num_query_tokens=n_query,
        image_text_hidden_size=16,
        image_token_index=tok.convert_tokens_to_ids("<image>") if image_tokens else None,
        initializer_range=INIT,
    )
    torch.manual_seed(seed)
    Blip2ForImageTextRetrieval(config).eval().save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def write_tiny_vilt(folder: Path, seed: int = 0) -> Path:
    from transformers import (
        ViltConfig,
        ViltForImageAndTextRetrieval,
        ViltImageProcessorPil,
        ViltProcessor,
    )

    config = ViltConfig(
        **_tower(),
        vocab_size=len(VOCAB),
        max_position_embeddings=40,
        image_size=IMAGE,
        patch_size=8,
    )
    torch.manual_seed(seed)
    ViltForImageAndTextRetrieval(config).eval().save_pretrained(folder)
    # shorter edge 32, longer edge at most int(1333/800*32)=53, multiples of 8: up to 48 pixels
    image_processor = ViltImageProcessorPil(size={"shortest_edge": IMAGE}, size_divisor=8)
    ViltProcessor(image_processor, _tokenizer(folder)).save_pretrained(folder)
    return folder


WRITERS = {
    "flava": write_tiny_flava,
    "blip": write_tiny_blip,
    "blip-2": write_tiny_blip2,
    "blip-2-no-image-tokens": lambda folder, seed=0: write_tiny_blip2(
        folder, seed, image_tokens=False
    ),
    "vilt": write_tiny_vilt,
}
VARIANTS = list(WRITERS)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("itm")
    return {name: write(root / name) for name, write in WRITERS.items()}


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    return _images()


# -- the direct computation ------------------------------------------------------------------------


def direct_logits(variant: str, folder: Path, images: list[Image.Image], texts: list[str]) -> Any:
    """The head's logits for the pairs (images[i], texts[i]) via the family's processor and the
    transformers model's own forward pass."""
    import transformers as T

    family = "blip-2" if variant.startswith("blip-2") else variant
    processor_cls, model_cls = {
        "flava": (T.FlavaProcessor, T.FlavaForPreTraining),
        "blip": (T.BlipProcessor, T.BlipForImageTextRetrieval),
        "blip-2": (T.Blip2Processor, T.Blip2ForImageTextRetrieval),
        "vilt": (T.ViltProcessor, T.ViltForImageAndTextRetrieval),
    }[family]
    # the PIL image processor, as the backend uses (the reference pipelines are PIL-based; the
    # torchvision one, transformers' default when torchvision is installed, resizes differently)
    processor = processor_cls.from_pretrained(folder, backend="pil")
    model = model_cls.from_pretrained(folder).eval()
    inputs = processor(images=images, text=texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        if family == "flava":
            return model(**inputs, return_loss=False).itm_logits
        if family == "blip":
            return model(**inputs, use_itm_head=True).itm_score
        if family == "blip-2":
            return model(**inputs, use_image_text_matching_head=True).logits_per_image
        return model(**inputs).logits


def direct_scores(variant: str, folder: Path, images: list[Image.Image], texts: list[str], mode):
    logits = direct_logits(variant, folder, images, texts).to(torch.float32)
    if logits.shape[1] == 1:
        return logits[:, 0].numpy()
    if mode == "prob":
        return torch.softmax(logits, dim=-1)[:, 1].numpy()
    return (logits[:, 1] - logits[:, 0]).numpy()


def our_scores(scorer: HFITMScorer, images: list[Image.Image], pairs=PAIRS) -> np.ndarray:
    from torch.utils.data import default_collate

    batch = default_collate([scorer.preprocess(images[i]) for i, _ in pairs])
    return scorer.score(batch, [TEXTS[t] for _, t in pairs])


# -- scores ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_scores_match_transformers(
    variant: str, tiny: dict[str, Path], images: list[Image.Image]
) -> None:
    folder = tiny[variant]
    pair_images = [images[i] for i, _ in PAIRS]
    pair_texts = [TEXTS[t] for _, t in PAIRS]
    assert len({len(t.split()) for t in pair_texts}) > 3  # lengths differ: padding matters
    modes = ["logit"] if variant == "vilt" else ["prob", "logit"]
    for mode in modes:
        scorer = HFITMScorer(str(folder), score=mode, device="cpu")
        assert isinstance(scorer, PairScorer)
        ours = our_scores(scorer, images)
        assert ours.dtype == np.float32 and ours.shape == (len(PAIRS),)
        expected = direct_scores(variant, folder, pair_images, pair_texts, mode)
        assert_close_to_reference(ours, expected, scale=1.0 if mode == "logit" else 0.0)
        if mode == "logit":  # pairs differ by the image (same text) and by the text (same image)
            assert abs(ours[0] - ours[6]) > 0.01 and abs(ours[0] - ours[1]) > 0.01
    if variant != "vilt":  # logit is logit(prob): same ranking, no saturation
        prob = our_scores(HFITMScorer(str(folder), device="cpu"), images)
        logit = our_scores(HFITMScorer(str(folder), score="logit", device="cpu"), images)
        # the reference goes through fp32 probabilities, whose 1 - p loses digits near p = 1
        assert_close_to_reference(logit, np.log(prob / (1 - prob)), rtol=10 * FP32_RTOL, scale=1.0)


@pytest.mark.parametrize("variant", ["flava", "blip", "blip-2", "vilt"])
def test_score_of_a_pair_does_not_depend_on_its_batch(
    variant: str, tiny: dict[str, Path], images: list[Image.Image]
) -> None:
    scorer = HFITMScorer(str(tiny[variant]), device="cpu")
    together = our_scores(scorer, images)
    alone = np.concatenate([our_scores(scorer, images, [p]) for p in PAIRS])
    assert_close_to_reference(together, alone, scale=1.0)


def test_empty_and_mismatched_batches(tiny: dict[str, Path], images: list[Image.Image]) -> None:
    scorer = HFITMScorer(str(tiny["blip"]), device="cpu")
    assert scorer.score(torch.zeros((0, 3, IMAGE, IMAGE)), []).shape == (0,)
    assert not scorer.loaded  # nothing to score: nothing loaded
    batch = torch.stack([scorer.preprocess(images[0])] * 2)
    with pytest.raises(ModelError, match="2 images for 1 texts"):
        scorer.score(batch, ["a cat"])
    with pytest.raises(TypeError):
        scorer.score(batch[:1], "a cat")


# -- laziness, fingerprint, spec -------------------------------------------------------------------


def test_lazy_loading(tiny: dict[str, Path], images: list[Image.Image]) -> None:
    scorer = HFITMScorer(str(tiny["vilt"]), device="cpu")
    assert not scorer.loaded and "not loaded" in repr(scorer)
    fp = scorer.fingerprint
    x = scorer.preprocess(images[1])
    assert set(x) == {"pixel_values", "pixel_mask"} and x["pixel_values"].shape == (3, 48, 48)
    assert not scorer.loaded  # fingerprint and preprocess need no weights
    desc = scorer.describe()
    assert desc["family"] == "vilt" and desc["spec"] == f"itm:{tiny['vilt']}"
    assert not scorer.loaded
    our_scores(scorer, images)
    assert scorer.loaded and scorer.fingerprint == fp


def test_fingerprint(tiny: dict[str, Path], tmp_path: Path) -> None:
    folder = tiny["blip"]
    scorer = HFITMScorer(str(folder), device="cpu")
    fp = scorer.fingerprint
    assert fp == {
        "fingerprint_version": 1,
        "backend": "itm",
        "family": "blip",
        "head": "BlipForImageTextRetrieval",
        "model": {"source": "local", "files": S.folder_digest(folder)},
        "score": "prob",
        "max_length": None,
        "dtype": "fp32",
    }
    json.dumps(fp)  # JSON-able
    copy = shutil.copytree(folder, tmp_path / "copy")
    assert HFITMScorer(str(copy), device="cpu").fingerprint == fp  # content-addressed
    keys = {
        fingerprint_key(HFITMScorer(str(folder), device="cpu", **kw).fingerprint)
        for kw in ({}, {"score": "logit"}, {"max_length": 16}, {"dtype": "bf16"})
    }
    assert len(keys) == 4
    other = write_tiny_blip(tmp_path / "other", seed=1)
    assert HFITMScorer(str(other), device="cpu").fingerprint["model"] != fp["model"]
    assert HFITMScorer(str(tiny["vilt"]), device="cpu").fingerprint["score"] == "logit"


def test_spec_objects_and_options(tiny: dict[str, Path]) -> None:
    folder = str(tiny["flava"])
    spec = SimpleNamespace(
        backend="itm", name=folder, options={"score": "logit", "max_length": "20"}
    )
    scorer = HFITMScorer(spec, device="cpu")
    assert scorer.score_mode == "logit" and scorer.max_length == 20
    assert scorer.spec_string == f"itm:{folder}?max_length=20&score=logit"
    assert HFITMScorer(spec, score="prob", device="cpu").score_mode == "prob"  # kwargs win
    with pytest.raises(ModelError, match="'itm' backend"):
        HFITMScorer(SimpleNamespace(backend="hf", name=folder, options={}))
    with pytest.raises(ModelError, match="'pooling' does not apply to backend 'itm'"):
        HFITMScorer(SimpleNamespace(backend="itm", name=folder, options={"pooling": "cls"}))
    with pytest.raises(ModelError, match="expected prob or logit"):
        HFITMScorer(folder, score="probability")
    with pytest.raises(ModelError, match="positive integer"):
        HFITMScorer(folder, max_length=0)
    with pytest.raises(ModelError, match="true or false"):
        HFITMScorer(folder, trust_remote_code="maybe")
    with pytest.raises(ModelError, match="unknown dtype"):
        HFITMScorer(folder, dtype="int8")
    with pytest.raises(ModelError, match="hub ids only"):
        HFITMScorer(folder, revision="main")
    with pytest.raises(ModelError, match="one rank logit"):
        HFITMScorer(str(tiny["vilt"]), score="prob")
    too_long = HFITMScorer(str(tiny["vilt"]), max_length=41, device="cpu")
    with pytest.raises(ModelError, match="exceeds the model's 40 text positions"):
        too_long.score(torch.zeros((1, 3, 48, 48)), ["a cat"])


def test_parsed_spec_strings(tiny: dict[str, Path]) -> None:
    """Through `parse_model_spec` and the registry, as `load_model` calls it."""
    from lexsem.models.factory import load_model, load_pair_scorer
    from lexsem.models.spec import parse_model_spec

    text = f"itm:{tiny['blip']}?score=logit&dtype=fp32"
    parsed = parse_model_spec(text)
    scorer = HFITMScorer(parsed, device="cpu", dtype=None, max_length=None, offline=True, name=text)
    assert (scorer.name, scorer.score_mode, scorer.family.model_type) == (text, "logit", "blip")
    assert scorer.spec_string == parsed.to_string()
    assert HFITMScorer(text, device="cpu").fingerprint == scorer.fingerprint
    loaded = load_model(text, device="cpu")
    assert type(loaded) is HFITMScorer and loaded.fingerprint == scorer.fingerprint
    assert load_pair_scorer(text).name == text


def test_unsupported_model_type(tmp_path: Path) -> None:
    folder = tmp_path / "clip"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "clip"}))
    with pytest.raises(ModelError, match=r"model_type 'clip'.*supported model_types: flava"):
        HFITMScorer(str(folder))
    (folder / "config.json").unlink()
    (folder / "model.safetensors").write_bytes(b"x")
    with pytest.raises(ModelError, match=r"no config\.json"):
        HFITMScorer(str(folder))
    assert set(FAMILIES) == {"flava", "blip", "blip-2", "vilt"}


def test_checkpoint_without_itm_head_is_refused(tiny: dict[str, Path], tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = shutil.copytree(tiny["blip"], tmp_path / "no-head")
    weights = load_file(folder / "model.safetensors")
    save_file(
        {k: v for k, v in weights.items() if not k.startswith("itm_head.")},
        folder / "model.safetensors",
        metadata={"format": "pt"},
    )
    scorer = HFITMScorer(str(folder), device="cpu")
    with pytest.raises(ModelError, match=r"lacks weights .*itm_head\.bias"):
        scorer.score(torch.zeros((1, 3, IMAGE, IMAGE)), ["a cat"])


# -- preprocessing in DataLoader workers -----------------------------------------------------------


class _Decoded(torch.utils.data.Dataset):
    def __init__(self, images: list[Image.Image], preprocess: Any) -> None:
        self.images = images
        self.preprocess = preprocess

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> Any:
        return self.preprocess(self.images[i])


@pytest.mark.parametrize("variant", ["blip", "vilt"])
def test_preprocess_is_picklable_and_runs_in_workers(
    variant: str, tiny: dict[str, Path], images: list[Image.Image]
) -> None:
    from torch.utils.data import DataLoader, default_collate

    scorer = HFITMScorer(str(tiny[variant]), device="cpu")
    expected = default_collate([scorer.preprocess(im) for im in images])
    clone = pickle.loads(pickle.dumps(scorer.preprocess))
    torch.testing.assert_close(default_collate([clone(im) for im in images]), expected)

    loader = DataLoader(_Decoded(images, scorer.preprocess), batch_size=2, num_workers=2)
    got = list(loader)
    torch.testing.assert_close(_cat(got), expected)
    assert not scorer.loaded

    our_scores(scorer, images)  # a loaded scorer pickles without its weights
    blob = pickle.dumps(scorer)
    back = pickle.loads(blob)
    assert not back.loaded and back.fingerprint == scorer.fingerprint
    assert len(blob) < 50_000


def _cat(batches: list[Any]) -> Any:
    if isinstance(batches[0], dict):
        return {k: torch.cat([b[k] for b in batches]) for k in batches[0]}
    return torch.cat(batches)

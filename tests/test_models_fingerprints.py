"""Fingerprints are cache keys: for the same spec they must stay exactly what they were before the
models layer was redesigned (one lazy base, options declared per backend, a backend registry), so
users' embedding and score caches stay valid. The expected dicts below were recorded from the
code before that redesign; `model` is the content digest of the tiny model folder or file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders.backends import require_module
from builders.tiny_dual_models import write_clip
from builders.tiny_itm_models import write_tiny_blip
from builders.tiny_text_models import write_tiny_bert, write_tiny_st
from builders.tiny_text_scorers import write_tiny_cola, write_tiny_gpt2, write_tiny_vera
from lexsem.models import source as S
from lexsem.models.factory import load_model
from lexsem.models.protocols import fingerprint_key

pytestmark = pytest.mark.torch

V1 = {"fingerprint_version": 1}
CLIP_TEXT = {
    "padding": "longest",
    "padding_side": "right",
    "default_max_length": None,
    "roberta_positions": False,
    "lowercase": False,
    "attention_mask": True,
}
CLIP_IMAGE = {"processor": "AutoImageProcessor", "backend": "pil", "inputs": ["pixel_values"]}
OPENAI_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_STD = [0.26862954, 0.26130258, 0.27577711]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fingerprints")
    bert = write_tiny_bert(root / "bert")
    return {
        "bert": bert,
        "st": write_tiny_st(root / "st", bert),
        "clip": write_clip(root / "clip"),
        "itm": write_tiny_blip(root / "itm"),
        "lm": write_tiny_gpt2(root / "lm"),
        "vera": write_tiny_vera(root / "vera"),
        "cola": write_tiny_cola(root / "cola"),
    }


def _local(folder: Path) -> dict[str, str]:
    return {"source": "local", "files": S.folder_digest(folder)}


def _text(backend: str, folder: Path, **fields: Any) -> dict[str, Any]:
    """A text encoder's fingerprint as the pre-redesign `LazyTextEncoder` wrote it."""
    base = {"prefix": None, "template": None, "max_length": None, "normalize": False}
    return {**V1, "backend": backend, "model": _local(folder), "dtype": "fp32", **base, **fields}


def _scorer(backend: str, folder: Path, **fields: Any) -> dict[str, Any]:
    """A blind text scorer's fingerprint as the pre-redesign `_LazyTextScorer` wrote it."""
    base = {"max_length": None, "dtype": "fp32"}
    return {**V1, "backend": backend, "model": _local(folder), **base, **fields}


CLIP = {"family": "clip", "model_class": "CLIPModel", "text": CLIP_TEXT, "image": CLIP_IMAGE}
HF = {"pooling": "mean", "padding_side": "right"}
LM = {"score": "mean-nll-tokens-2..n", "add_bos": "tokenizer-default"}
VERA_HEAD = "last-token; shared.weight[32099], [32098,0], t=[32097,0]"
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    # (tiny model, spec with {folder}, load_model keyword arguments, fields beyond the common)
    ("st", "st:{folder}", {}, {}),
    ("st", "st:{folder}?normalize=TRUE&prefix=q%20:%20", {}, {"normalize": True, "prefix": "q : "}),
    ("st", "st:{folder}?template=q:%20{{text}}", {"max_length": 9},
     {"template": "q: {text}", "max_length": 9}),
    ("st", "st:{folder}?dtype=bf16&trust_remote_code=true", {}, {"dtype": "bf16"}),
    ("bert", "hf:{folder}", {}, HF),
    ("bert", "hf:{folder}?pooling=last&normalize=true&max_length=8", {"dtype": "fp16"},
     {**HF, "pooling": "last", "eos": "append-if-missing", "normalize": True, "max_length": 8,
      "dtype": "fp16"}),
    ("clip", "clip:{folder}", {}, CLIP),
    ("clip", "clip:{folder}?template=a+photo+of+{{text}}&dtype=bf16", {"max_length": 8},
     {**CLIP, "template": "a photo of {text}", "dtype": "bf16", "max_length": 8}),
    ("lm", "lm:{folder}", {}, LM),
    ("lm", "lm:{folder}?add_bos=FALSE&max_length=8", {"dtype": "bf16"},
     {**LM, "add_bos": False, "max_length": 8, "dtype": "bf16"}),
    ("vera", "vera:{folder}", {}, {"head": VERA_HEAD, "calibrate": True, "max_length": 128}),
    ("vera", "vera:{folder}?calibrate=false&max_length=64", {},
     {"head": VERA_HEAD, "calibrate": False, "max_length": 64}),
    ("cola", "cola:{folder}", {}, {"score": "softmax", "label": 1}),
    ("cola", "cola:{folder}?label=0", {}, {"score": "softmax", "label": 0}),
]  # fmt: skip


@pytest.mark.parametrize(("folder_key", "spec", "kwargs", "fields"), CASES)
def test_fingerprint_is_unchanged(
    tiny: dict[str, Path], folder_key: str, spec: str, kwargs: dict[str, Any], fields: dict
) -> None:
    folder = tiny[folder_key]
    model = load_model(spec.format(folder=folder), device="cpu", **kwargs)
    backend = spec.partition(":")[0]
    make = _scorer if backend in ("lm", "vera", "cola") else _text
    assert model.fingerprint == make(backend, folder, **fields)
    assert not model.loaded


def test_itm_fingerprint_is_unchanged(tiny: dict[str, Path]) -> None:
    folder = tiny["itm"]
    want = {
        **V1,
        "backend": "itm",
        "family": "blip",
        "head": "BlipForImageTextRetrieval",
        "model": _local(folder),
        "score": "prob",
        "max_length": None,
        "dtype": "fp32",
    }
    assert load_model(f"itm:{folder}", device="cpu").fingerprint == want
    logit = load_model(f"itm:{folder}?score=logit&max_length=16", dtype="bf16", device="cpu")
    assert logit.fingerprint == {**want, "score": "logit", "max_length": 16, "dtype": "bf16"}


def test_openclip_fingerprint_is_unchanged(tmp_path: Path) -> None:
    require_module("open_clip")
    ckpt = tmp_path / "w.pt"
    ckpt.write_bytes(b"not loaded: building the encoder reads no weights")
    enc = load_model(f"openclip:RN50@{ckpt}?quick_gelu=true&prefix=a%20", device="cpu")
    assert enc.fingerprint == {
        **V1,
        "backend": "openclip",
        "model": {"source": "local", "file": S.file_digest(ckpt)},
        "prefix": "a ",
        "template": None,
        "max_length": None,
        "normalize": False,
        "dtype": "fp32",
        "arch": "RN50",
        "pretrained": None,
        "quick_gelu": True,
        "activation": "QuickGELU",
        "image": {
            "transform": "open_clip eval",
            "size": 224,
            "mode": "RGB",
            "mean": OPENAI_MEAN,
            "std": OPENAI_STD,
            "interpolation": "bicubic",
            "resize_mode": "shortest",
            "fill_color": 0,
        },
    }


def test_spelling_of_a_spec_does_not_change_its_key(tiny: dict[str, Path]) -> None:
    """Option order, case of true/false, dtype aliases and spelled-out defaults give one key."""
    folder = tiny["lm"]
    keys = {
        fingerprint_key(load_model(s, device="cpu").fingerprint)
        for s in (
            f"lm:{folder}?add_bos=true&dtype=fp32",
            f"LM:{folder}?dtype=float32&add_bos=TRUE",
            f"lm:{folder}?add_bos=True",
        )
    }
    assert len(keys) == 1

"""Which loader a generative-VLM folder needs, read from its config.json, and the loading.

- ``transformers`` (every family transformers knows): ``AutoModelForImageTextToText`` with its
  ``AutoProcessor``;
- ``clip_t5`` (``model_type: clip_t5``, CLIP-FlanT5): `lexsem.models.vlm.clip_t5`;
- ``llava_original`` (a LLaMA checkpoint of the LLaVA code base: ``model_type`` ``llava`` /
  ``share4v`` with ``mm_vision_tower`` and no ``text_config``; ShareGPT4V, LLaVA-1.5's
  originals): `lexsem.models.vlm.llava_original`.

The first entry of `FAMILY_LOADERS` whose `detect` accepts the config loads the folder; a new
checkpoint format adds an entry before the transformers one. `companions` names the other
models' files a folder's model reads (a vision tower, a tokenizer): their identities join the
backend's fingerprint, so a different tower is a different model. Nothing here imports torch
until a model is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.models.hf_config import read_config
from lexsem.models.vlm import clip_t5, llava_original
from lexsem.models.vlm.original_format import companion, tower_source

__all__ = ["FAMILY_LOADERS", "FamilyLoader", "companions", "family_of", "load_vlm"]

Load = Callable[[Path, Any, bool | None], tuple[Any, Any]]


@dataclass(frozen=True)
class FamilyLoader:
    """A checkpoint format: which configs it takes, how it loads (folder, torch dtype,
    offline → (model, processor)), and the other models it reads (folder, config, offline →
    {role: source})."""

    name: str
    detect: Callable[[dict[str, Any]], bool]
    load: Load
    companions: Callable[[Path, dict[str, Any], bool | None], dict[str, Any]]


def _load_transformers(folder: Path, dtype: Any, offline: bool | None) -> tuple[Any, Any]:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(
        str(folder), dtype=dtype, local_files_only=True
    )
    return model, processor


def _clip_t5_companions(
    folder: Path, config: dict[str, Any], offline: bool | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"vision_tower": tower_source(config, folder, offline)}
    if not clip_t5.tokenizer_folder(folder):
        out["tokenizer"] = companion(clip_t5.TOKENIZER, "tokenizer", folder, offline)
    return out


FAMILY_LOADERS: list[FamilyLoader] = [
    FamilyLoader(
        "clip_t5",
        lambda c: c.get("model_type") == clip_t5.MODEL_TYPE,
        clip_t5.load_clip_t5,
        _clip_t5_companions,
    ),
    FamilyLoader(
        "llava_original",
        llava_original.is_original,
        llava_original.load_llava_original,
        lambda folder, config, offline: {"vision_tower": tower_source(config, folder, offline)},
    ),
    FamilyLoader("transformers", lambda c: True, _load_transformers, lambda *_: {}),
]


def _config(folder: Path) -> dict[str, Any]:
    return read_config(folder) if (Path(folder) / "config.json").is_file() else {}


def family_of(folder: Path) -> FamilyLoader:
    """The loader of the model in `folder` (see the module doc)."""
    config = _config(folder)
    return next(f for f in FAMILY_LOADERS if f.detect(config))


def companions(folder: Path, offline: bool | None = None) -> dict[str, Any]:
    """{role: identity} of the other models' files the folder's model reads ({} for a
    transformers family)."""
    config = _config(folder)
    loader = next(f for f in FAMILY_LOADERS if f.detect(config))
    parts = loader.companions(folder, config, offline)
    return {role: src.identity() for role, src in parts.items()}


def load_vlm(folder: Path, dtype: Any, offline: bool | None = None) -> tuple[Any, Any]:
    """(model, processor) of the generative VLM in `folder`, by its family's loader."""
    return family_of(folder).load(Path(folder), dtype, offline)

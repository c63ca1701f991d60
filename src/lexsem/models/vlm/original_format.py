"""What the checkpoints in the LLaVA code base's own format share (CLIP-FlanT5, ShareGPT4V /
LLaVA-1.5 originals): the ``mm_*`` fields of their config.json, the CLIP vision tower they
name (``mm_vision_tower``: a hub id or a folder, resolved as any lexsem model NAME), the
features it gives (hidden states of layer ``mm_vision_select_layer``, without the class token
for ``mm_vision_select_feature = patch``), and their weights read from the folder's
safetensors or torch files (``weights_only``: no pickled code runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.source import ModelSource, resolve_source, weight_files
from lexsem.models.vlm.image_token_processor import (
    Conversation,
    ImageTokenProcessor,
    ImageTokenTokenizer,
)

__all__ = [
    "checkpoint_processor",
    "companion",
    "read_state_dict",
    "strict_load",
    "tower_image_processor",
    "tower_source",
    "tower_tokens",
]

FEATURES = ("patch", "cls_patch")


def companion(name: str, what: str, folder: Path, offline: bool | None) -> ModelSource:
    """Another model's files that `folder`'s model needs (`what`: its role), resolved like a
    model NAME: a local folder or a hub id."""
    try:
        return resolve_source(name, offline=offline)
    except ModelError as exc:
        raise ModelError(f"the {what} {name!r} of the model {folder}: {exc}") from exc


def tower_source(config: dict[str, Any], folder: Path, offline: bool | None) -> ModelSource:
    """The vision tower the config names (``mm_vision_tower``), resolved like a model NAME."""
    name = config.get("mm_vision_tower") or config.get("vision_tower")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{Path(folder) / 'config.json'} names no mm_vision_tower")
    return companion(name, "vision tower", folder, offline)


def tower_tokens(config: dict[str, Any], vision_config: Any) -> tuple[int, str]:
    """(image features per image, transformers' feature strategy) for the config's
    ``mm_vision_select_feature``."""
    feature = config.get("mm_vision_select_feature", "patch")
    if feature not in FEATURES:
        raise ModelError(f"mm_vision_select_feature {feature!r} is not one of {FEATURES}")
    patches = (vision_config.image_size // vision_config.patch_size) ** 2
    return (patches, "default") if feature == "patch" else (patches + 1, "full")


def tower_image_processor(tower: Path) -> Any:
    """The vision tower's CLIP image processor, the PIL backend (the code base's runs on PIL
    images)."""
    from transformers import AutoImageProcessor
    from transformers.models.auto import image_processing_auto

    # transformers ≥ 5 chooses a backend by name; older versions by use_fast
    kwargs: dict[str, Any] = (
        {"backend": "pil"}
        if hasattr(image_processing_auto, "_resolve_backend")
        else {"use_fast": False}
    )
    try:
        return AutoImageProcessor.from_pretrained(str(tower), local_files_only=True, **kwargs)
    except (OSError, ValueError) as exc:
        raise ModelError(f"the vision tower {tower} has no image processor: {exc}") from exc


def checkpoint_processor(
    tokenizer: Any, placeholder: int, tower: Path, n_tokens: int, conversation: Conversation
) -> ImageTokenProcessor:
    """The processor of a checkpoint: its tokenizer with the image placeholder id
    `placeholder`, the vision tower's image processor, `n_tokens` features per image."""
    return ImageTokenProcessor(
        ImageTokenTokenizer(tokenizer, placeholder),
        tower_image_processor(tower), n_tokens, conversation,
    )  # fmt: skip


def read_state_dict(folder: Path) -> dict[str, Any]:
    """Every tensor of the folder's weight files (safetensors, else torch files)."""
    import torch

    files = weight_files(folder)
    if not files:
        raise ModelError(f"model folder {folder} holds no weight files")
    out: dict[str, Any] = {}
    for f in files:
        try:
            if f.suffix == ".safetensors":
                from safetensors.torch import load_file

                part = load_file(str(f))
            else:
                part = torch.load(str(f), map_location="cpu", weights_only=True)
        except Exception as exc:  # damaged file, pickled code refused by weights_only
            raise ModelError(f"cannot read the weights {f}: {exc}") from exc
        if not isinstance(part, dict):
            raise ModelError(f"{f} holds no state dict")
        out.update(part)
    return out


def strict_load(cls: Any, config: Any, state: dict[str, Any], dtype: Any, where: Path) -> Any:
    """`cls` (a transformers model class) with exactly the weights of `state` (a `ModelError`
    naming `where` and the keys when some are missing or left over)."""
    model, info = cls.from_pretrained(
        None, config=config, state_dict=state, dtype=dtype, output_loading_info=True
    )
    missing, unexpected = info.get("missing_keys") or [], info.get("unexpected_keys") or []
    mismatched = info.get("mismatched_keys") or []
    if missing or unexpected or mismatched:
        raise ModelError(
            f"the weights of {where} do not fit {cls.__name__}: missing {sorted(missing)[:5]}, "
            f"left over {sorted(unexpected)[:5]}, of another shape {list(mismatched)[:5]}"
        )
    return model

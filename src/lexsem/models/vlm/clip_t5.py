"""CLIP-FlanT5 (``zhiqiulin/clip-flant5-xl``, ``-xxl``): the model of "Evaluating
Text-to-Visual Generation with Image-to-Text Generation" (VQAScore, §3), loaded natively.

The checkpoint (config ``model_type: clip_t5``) is a Flan-T5 with two more parts: a CLIP
vision tower, the hub id or folder its config names (``mm_vision_tower``, ViT-L/14-336 for
the released models), and an MLP projector (``mm_projector_type``, ``mlp2x_gelu``). An image
is the tower's hidden states of layer ``mm_vision_select_layer`` (its patch tokens), projected
to the T5 width and put into the encoder's input where the prompt has ``<image>``; the decoder
is teacher-forced on the answer. This module builds that from transformers'
`CLIPVisionModel`, a projector and `T5ForConditionalGeneration`, with the checkpoint's weights
(`lexsem.models.vlm.original_format`): the tower's weights come from the checkpoint when it
holds them (``vision_tower.vision_tower.*``, as the reference's loader overwrites the tower it
built), else from the tower's own folder.

The tokenizer is the checkpoint folder's when it has one, else ``google/flan-t5-xxl`` (the
reference's tokenizer of both sizes: every Flan-T5 size shares one SentencePiece vocabulary).
The processor is `lexsem.models.vlm.image_token_processor`'s, in its T5 form (every piece of
the prompt ends in ``</s>``), with the ``t5_chat`` conversation. The reference's VQAScore for
this family is the ``clip_t5`` entry of the recipe table (`lexsem.models.vlm.reference`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.hf_config import read_config
from lexsem.models.vlm.image_token_processor import VICUNA_V1_SYSTEM, Conversation
from lexsem.models.vlm.original_format import (
    checkpoint_processor,
    companion,
    read_state_dict,
    strict_load,
    tower_source,
    tower_tokens,
)

__all__ = ["CONVERSATION", "MODEL_TYPE", "load_clip_t5", "tokenizer_folder"]

MODEL_TYPE = "clip_t5"
# t2v_metrics `format_question(..., 't5_chat')`: system + " USER: <image>\n" + q + " ASSISTANT: "
CONVERSATION = Conversation(system=VICUNA_V1_SYSTEM, generation="ASSISTANT: ")
TOKENIZER = "google/flan-t5-xxl"
_TOKENIZER_FILES = ("tokenizer.json", "spiece.model", "tokenizer_config.json")


def tokenizer_folder(folder: Path) -> bool:
    """Whether the checkpoint folder has its own tokenizer."""
    return any((Path(folder) / n).is_file() for n in _TOKENIZER_FILES)


def projector(kind: str, width_in: int, width_out: int) -> Any:
    """The code base's ``build_vision_projector``: ``linear``, ``mlp{N}x_gelu`` or ``identity``."""
    from torch import nn

    if kind == "linear":
        return nn.Linear(width_in, width_out)
    if kind == "identity":
        return nn.Identity()
    match = re.fullmatch(r"mlp(\d+)x_gelu", kind)
    if not match:
        raise ModelError(f"mm_projector_type {kind!r} is not linear, mlpNx_gelu or identity")
    layers: list[Any] = [nn.Linear(width_in, width_out)]
    for _ in range(1, int(match.group(1))):
        layers += [nn.GELU(), nn.Linear(width_out, width_out)]
    return nn.Sequential(*layers)


class ClipT5Config:
    """What lexsem reads of the loaded model (`lexsem.models.vlm.layout`): an encoder-decoder
    of model type ``clip_t5``, its image placeholder id, and the T5 config."""

    model_type = MODEL_TYPE
    is_encoder_decoder = True

    def __init__(
        self, text_config: Any, image_token_id: int, feature_layer: int, strategy: str
    ) -> None:
        self.text_config = text_config
        self.image_token_id = image_token_id
        self.vision_feature_layer = feature_layer
        self.vision_feature_select_strategy = strategy


@functools.cache
def _module_class() -> type:
    import torch
    from torch import nn

    class ClipT5(nn.Module):
        """CLIP vision tower + projector + T5: the image's projected features replace the
        placeholder ids of the encoder's input."""

        def __init__(self, vision: Any, proj: Any, t5: Any, config: ClipT5Config) -> None:
            super().__init__()
            self.vision_tower, self.mm_projector, self.t5 = vision, proj, t5
            self.config = config

        def image_features(self, pixel_values: Any) -> Any:
            out = self.vision_tower(pixel_values, output_hidden_states=True)
            feats = out.hidden_states[self.config.vision_feature_layer]
            if self.config.vision_feature_select_strategy == "default":
                feats = feats[:, 1:]
            return self.mm_projector(feats)

        def encoder_embeds(self, input_ids: Any, pixel_values: Any) -> Any:
            slots = input_ids == self.config.image_token_id
            embeds = self.t5.get_input_embeddings()(input_ids.masked_fill(slots, 0))
            if pixel_values is None:
                if bool(slots.any()):
                    raise ModelError("the prompt has image tokens but no image was given")
                return embeds
            feats = self.image_features(pixel_values).to(embeds.dtype)
            if int(slots.sum()) != feats.shape[0] * feats.shape[1]:
                raise ModelError(
                    f"{int(slots.sum())} image tokens for {feats.shape[0]} images of "
                    f"{feats.shape[1]} features"
                )
            return embeds.masked_scatter(slots[..., None], feats)

        def forward(
            self, input_ids: Any, attention_mask: Any = None, pixel_values: Any = None, **kw: Any
        ) -> Any:
            embeds = self.encoder_embeds(input_ids, pixel_values)
            return self.t5(inputs_embeds=embeds, attention_mask=attention_mask, **kw)

        @torch.no_grad()
        def generate(
            self, input_ids: Any, attention_mask: Any = None, pixel_values: Any = None, **kw: Any
        ) -> Any:
            embeds = self.encoder_embeds(input_ids, pixel_values)
            return self.t5.generate(inputs_embeds=embeds, attention_mask=attention_mask, **kw)

    return ClipT5


def _t5_config(config: dict[str, Any]) -> Any:
    from transformers import T5Config

    skip = {"model_type", "architectures", "transformers_version", "_name_or_path", "auto_map"}
    return T5Config(
        **{k: v for k, v in config.items() if k not in skip and not k.startswith("mm_")}
    )


def _split(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(T5, tower, projector) weights of the checkpoint's state dict."""
    t5, tower, proj = {}, {}, {}
    for key, value in state.items():
        if key.startswith("vision_tower.vision_tower."):
            tower[key.removeprefix("vision_tower.vision_tower.")] = value
        elif key.startswith("mm_projector."):
            proj[key.removeprefix("mm_projector.")] = value
        elif key != "embed_tokens.weight":  # the reference's alias of the encoder's embeddings
            t5[key] = value
    for alias in ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
        if alias in t5:  # tied to `shared`
            t5.setdefault("shared.weight", t5[alias])
            del t5[alias]
    if "shared.weight" not in t5 and "embed_tokens.weight" in state:
        t5["shared.weight"] = state["embed_tokens.weight"]
    return t5, tower, proj


def load_clip_t5(folder: Path, dtype: Any, offline: bool | None) -> tuple[Any, Any]:
    """(model, processor) of a CLIP-FlanT5 checkpoint folder."""
    from transformers import (
        AutoTokenizer,
        CLIPVisionConfig,
        CLIPVisionModel,
        T5ForConditionalGeneration,
    )

    folder = Path(folder)
    config = read_config(folder)
    tower = tower_source(config, folder, offline).path
    t5_state, tower_state, proj_state = _split(read_state_dict(folder))
    t5_config = _t5_config(config)
    t5 = strict_load(T5ForConditionalGeneration, t5_config, t5_state, dtype, folder)
    if tower_state:
        vision_config = CLIPVisionConfig.from_pretrained(str(tower), local_files_only=True)
        vision = strict_load(CLIPVisionModel, vision_config, tower_state, dtype, folder)
    else:
        vision = CLIPVisionModel.from_pretrained(str(tower), dtype=dtype, local_files_only=True)
    kind = str(config.get("mm_projector_type", "linear"))
    width_in = int(config.get("mm_hidden_size", vision.config.hidden_size))
    proj = projector(kind, width_in, t5_config.d_model)
    try:
        proj.load_state_dict(proj_state, strict=True)
    except RuntimeError as exc:
        raise ModelError(f"the projector weights of {folder} do not fit {kind}: {exc}") from exc
    proj.to(dtype)
    n_tokens, strategy = tower_tokens(config, vision.config)
    placeholder = int(t5.get_input_embeddings().num_embeddings)
    layer = int(config.get("mm_vision_select_layer", -2))
    model = _module_class()(vision, proj, t5, ClipT5Config(t5_config, placeholder, layer, strategy))
    tok_path = folder
    if not tokenizer_folder(folder):
        tok_path = companion(TOKENIZER, "tokenizer", folder, offline).path
    tok = AutoTokenizer.from_pretrained(str(tok_path), config=t5_config, local_files_only=True)
    return model, checkpoint_processor(tok, placeholder, tower, n_tokens, CONVERSATION)

"""LLaVA-1.5 checkpoints in the LLaVA code base's own format (ShareGPT4V: ``Lin-Chen/
ShareGPT4V-7B``, ``-13B``; the original ``liuhaotian/llava-v1.5-*``), loaded as transformers'
`LlavaForConditionalGeneration`.

Such a checkpoint ("Improved Baselines with Visual Instruction Tuning", §3; "ShareGPT4V:
Improving Large Multi-Modal Models with Better Captions", §4) is a LLaMA / Vicuna causal LM
whose config.json carries ``mm_*`` fields (``model_type`` ``llava`` or ``share4v``, no
``text_config``): a CLIP vision tower named by ``mm_vision_tower`` (ShareGPT4V's own tuned
ViT-L/14-336, ``Lin-Chen/ShareGPT4V-7B_Pretrained_vit-large336-l12``), the hidden states of
layer ``mm_vision_select_layer`` without the class token, and an ``mlp2x_gelu`` projector.
That is transformers' LLaVA architecture; the weights are renamed onto it:

- ``model.embed_tokens`` / ``model.layers.*`` / ``model.norm`` → ``model.language_model.*``;
- ``model.mm_projector.0`` / ``.2`` → ``model.multi_modal_projector.linear_1`` / ``linear_2``;
- ``lm_head`` stays; the rotary ``inv_freq`` buffers older checkpoints saved are dropped;
- the vision tower's weights come from the tower's own folder, as the reference's loader does
  (it builds the tower late, from ``mm_vision_tower``, so a copy inside the checkpoint is not
  read).

The image placeholder gets an embedding row of its own after the vocabulary (its input is
replaced by the image's features before the language model reads it); the LM head keeps the
checkpoint's vocabulary, so every softmax is over the reference's tokens. The tokenizer is the
checkpoint folder's (its pad token the unknown token, as the reference sets it); the processor
is `lexsem.models.vlm.image_token_processor`'s in its LLaMA form, with the ``vicuna_v1``
conversation (system message included). Such a checkpoint loads as transformers' ``llava``:
the reference's VQAScore for it is the ``llava`` entry of the recipe table
(`lexsem.models.vlm.reference`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.hf_config import read_config
from lexsem.models.vlm.image_token_processor import VICUNA_V1_SYSTEM, Conversation
from lexsem.models.vlm.original_format import (
    checkpoint_processor,
    read_state_dict,
    strict_load,
    tower_source,
    tower_tokens,
)

__all__ = ["CONVERSATION", "MODEL_TYPES", "load_llava_original", "rename"]

MODEL_TYPES = ("llava", "share4v", "llava_llama")
CONVERSATION = Conversation(system=VICUNA_V1_SYSTEM)  # LLaVA's conv_vicuna_v1

_RENAMES = (
    ("model.mm_projector.0.", "model.multi_modal_projector.linear_1."),
    ("model.mm_projector.2.", "model.multi_modal_projector.linear_2."),
    ("model.", "model.language_model."),
)


def is_original(config: dict[str, Any]) -> bool:
    """Whether a config.json is a LLaVA-code-base LLaMA checkpoint (see the module doc)."""
    return (
        config.get("model_type") in MODEL_TYPES
        and "mm_vision_tower" in config
        and "text_config" not in config
    )


def rename(state: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's language-model and projector weights under transformers' LLaVA names
    (the vision tower's and the rotary buffers left out; see the module doc)."""
    out = {}
    for key, value in state.items():
        if key.startswith("model.vision_tower.") or key.endswith("rotary_emb.inv_freq"):
            continue
        if key.startswith("lm_head."):
            out[key] = value
            continue
        for old, new in _RENAMES:
            if key.startswith(old):
                out[new + key[len(old) :]] = value
                break
        else:
            raise ModelError(f"the checkpoint has a weight lexsem does not place: {key}")
    return out


def _text_config(config: dict[str, Any]) -> Any:
    from transformers import LlamaConfig

    skip = {"model_type", "architectures", "transformers_version", "_name_or_path", "auto_map",
            "torch_dtype", "dtype"}  # fmt: skip
    return LlamaConfig(
        **{k: v for k, v in config.items() if k not in skip and not k.startswith("mm_")}
    )


def _check(config: dict[str, Any], folder: Path) -> None:
    where = Path(folder) / "config.json"
    kind = config.get("mm_projector_type", "linear")
    if kind != "mlp2x_gelu":
        raise ModelError(f"{where}: mm_projector_type {kind!r} (lexsem loads mlp2x_gelu)")
    if config.get("mm_use_im_start_end") or config.get("mm_use_im_patch_token"):
        raise ModelError(f"{where}: image start/end or patch tokens are not supported")
    if config.get("mm_patch_merge_type", "flat") != "flat":
        raise ModelError(f"{where}: mm_patch_merge_type must be flat (LLaVA-1.5)")


def load_llava_original(folder: Path, dtype: Any, offline: bool | None) -> tuple[Any, Any]:
    """(model, processor) of a LLaVA-code-base checkpoint folder (see the module doc)."""
    import torch
    from transformers import AutoTokenizer, CLIPVisionModel, LlavaConfig
    from transformers import LlavaForConditionalGeneration as Llava

    folder = Path(folder)
    config = read_config(folder)
    _check(config, folder)
    tower = tower_source(config, folder, offline).path
    vision = CLIPVisionModel.from_pretrained(str(tower), dtype=dtype, local_files_only=True)
    n_tokens, strategy = tower_tokens(config, vision.config)
    text_config = _text_config(config)
    vocab = int(text_config.vocab_size)
    layer = int(config.get("mm_vision_select_layer", -2))
    llava_config = LlavaConfig(
        vision_config=vision.config, text_config=text_config, image_token_id=vocab,
        projector_hidden_act="gelu", vision_feature_layer=layer,
        vision_feature_select_strategy=strategy, multimodal_projector_bias=True,
    )  # fmt: skip
    state = rename(read_state_dict(folder))
    state.update({f"model.vision_tower.{k}": v for k, v in vision.state_dict().items()})
    if "lm_head.weight" not in state and config.get("tie_word_embeddings"):
        state["lm_head.weight"] = state["model.language_model.embed_tokens.weight"]
    model = strict_load(Llava, llava_config, state, dtype, folder)
    old = model.get_input_embeddings()
    grown = torch.nn.Embedding(vocab + 1, old.embedding_dim, dtype=old.weight.dtype)
    with torch.no_grad():
        grown.weight[:vocab] = old.weight
        grown.weight[vocab:] = 0
    model.model.language_model.embed_tokens = grown
    tok = AutoTokenizer.from_pretrained(str(folder), config=text_config, local_files_only=True)
    if tok.unk_token is not None:  # the reference's pad token
        tok.pad_token = tok.unk_token
    return model, checkpoint_processor(tok, vocab, tower, n_tokens, CONVERSATION)

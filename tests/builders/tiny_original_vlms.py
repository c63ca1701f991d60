"""Tiny random checkpoints in the LLaVA code base's own format, written to folders laid out as
the real hub repos are: CLIP-FlanT5 (``zhiqiulin/clip-flant5-xxl``: a T5 config with
``model_type: clip_t5`` and ``mm_*`` fields, sharded ``pytorch_model-*.bin`` holding the T5,
the projector ``mm_projector.{0,2}`` and the tower ``vision_tower.vision_tower.*``) and
ShareGPT4V (``Lin-Chen/ShareGPT4V-7B``: a LLaMA config with ``model_type: share4v``, the
LLaVA code base's weight names ``model.layers.*``, ``model.mm_projector.*``, a copy of the
tower and the rotary buffers older transformers saved), each naming a tiny CLIP vision tower
folder by path in ``mm_vision_tower``.

Each builder returns, besides the folder, the modules it saved (the T5 or LLaMA, the CLIP
tower, the projector), so a test can compute the reference's numbers by hand without lexsem's
loader.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.backends import optional_import

torch = optional_import("torch")

SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
QUESTION = 'Does this figure show "{}"? Please answer yes or no.'
CAPTIONS = ["a dog runs on the bed", "a red cat sleeps", "a blue photo of a dog"]
ANSWERS = ["Yes", "yes", "YES", "No", "no", "NO"]
# the pieces around <image> of every prompt the tests write, so that their words are in the
# vocabulary (a word outside it is <unk>)
CORPUS = [
    f"{SYSTEM} USER: ", "USER: ", " ASSISTANT: ", "\nDescribe the image. ASSISTANT: ",
    *(f"\n{QUESTION.format(c)} ASSISTANT: {a}" for c in CAPTIONS for a in ANSWERS),
    *(f"ASSISTANT: {c}" for c in CAPTIONS),
]  # fmt: skip
TOWER = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 3,
         "num_attention_heads": 2, "image_size": 32, "patch_size": 16}  # fmt: skip


@dataclass
class Tiny:
    """A written checkpoint folder and the modules it holds."""

    folder: Path
    tower: Path
    lm: Any  # T5ForConditionalGeneration or LlamaForCausalLM
    vision: Any  # CLIPVisionModel
    projector: Any  # nn.Sequential(Linear, GELU, Linear)


def _tokenizer(specials: list[str], template: str) -> Any:
    """A word-level tokenizer split as SentencePiece splits (``▁`` before each word, a lone
    ``▁`` for a trailing space), its vocabulary the pieces of `CORPUS`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    split = pre_tokenizers.Metaspace(prepend_scheme="always")
    pieces = sorted({p for text in CORPUS for p, _ in split.pre_tokenize_str(text)})
    vocab = {w: i for i, w in enumerate([*specials, *pieces])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = split
    tk.decoder = decoders.Metaspace(prepend_scheme="always")
    tk.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[(t, vocab[t]) for t in ("<s>", "</s>") if t in template]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", pad_token=specials[0] if specials[0] == "<pad>"
        else None, eos_token="</s>", bos_token="<s>" if "<s>" in specials else None,
    )  # fmt: skip


def t5_tokenizer() -> Any:
    """The tiny T5-like tokenizer: no begin-of-text token, ``</s>`` after every text."""
    return _tokenizer(["<pad>", "</s>", "<unk>"], "$A </s>")


def write_tower(folder: Path, whole_clip: bool, seed: int) -> Any:
    """A tiny CLIP vision tower folder: a whole CLIP model (as ``openai/clip-vit-large-
    patch14-336``) or a vision model alone (as ShareGPT4V's tuned tower); returns the
    `CLIPVisionModel` it holds."""
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPTextConfig,
        CLIPVisionConfig,
        CLIPVisionModel,
    )

    torch.manual_seed(seed)
    vision_config = CLIPVisionConfig(**TOWER)
    if whole_clip:
        text = CLIPTextConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                              num_attention_heads=2, vocab_size=50, projection_dim=8)  # fmt: skip
        CLIPModel(CLIPConfig(text_config=text.to_dict(), vision_config=vision_config.to_dict(),
                             projection_dim=8)).save_pretrained(folder)  # fmt: skip
    else:
        CLIPVisionModel(vision_config).save_pretrained(folder)
    CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(folder)
    return CLIPVisionModel.from_pretrained(folder).eval()


def _projector(width_in: int, width_out: int, seed: int) -> Any:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(width_in, width_out), torch.nn.GELU(), torch.nn.Linear(width_out, width_out)
    ).eval()


def _save_shards(state: dict[str, Any], folder: Path) -> None:
    """Two ``pytorch_model-0000k-of-00002.bin`` files and their index, as the hub repos."""
    import json

    keys = sorted(state)
    halves = [keys[: len(keys) // 2], keys[len(keys) // 2 :]]
    index: dict[str, str] = {}
    for k, part in enumerate(halves, 1):
        name = f"pytorch_model-0000{k}-of-00002.bin"
        torch.save({key: state[key].clone().contiguous() for key in part}, folder / name)
        index.update(dict.fromkeys(part, name))
    (folder / "pytorch_model.bin.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": index}), encoding="utf-8"
    )


def _write_config(folder: Path, config: dict[str, Any]) -> None:
    import json

    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def write_clip_t5(
    folder: Path, *, tower_in_checkpoint: bool = True, tokenizer: bool = True
) -> Tiny:
    """A tiny CLIP-FlanT5 checkpoint and its tower (``<folder>-tower``, a whole CLIP model)."""
    from transformers import T5Config, T5ForConditionalGeneration

    folder.mkdir(parents=True)
    tower = folder.with_name(folder.name + "-tower")
    vision = write_tower(tower, whole_clip=True, seed=1)
    tok = t5_tokenizer()
    t5_config = T5Config(
        vocab_size=len(tok), d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2,
        num_heads=2, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
    )  # fmt: skip
    torch.manual_seed(0)
    t5 = T5ForConditionalGeneration(t5_config).eval()
    proj = _projector(16, 16, seed=2)
    state = {k: v for k, v in t5.state_dict().items() if "embed_tokens" not in k}
    state["embed_tokens.weight"] = t5.shared.weight  # the reference's alias
    state.update({f"mm_projector.{k}": v for k, v in proj.state_dict().items()})
    if tower_in_checkpoint:
        prefix = "vision_tower.vision_tower.vision_model."
        state.update({prefix + k: v for k, v in vision.state_dict().items()})
    _save_shards(state, folder)
    config = {
        **t5_config.to_dict(), "model_type": "clip_t5",
        "architectures": ["CLIPT5ForConditionalGeneration"], "mm_vision_tower": str(tower),
        "mm_hidden_size": 16, "mm_projector_type": "mlp2x_gelu", "mm_vision_select_layer": -2,
        "mm_vision_select_feature": "patch", "use_mm_proj": True,
    }  # fmt: skip
    _write_config(folder, config)
    if tokenizer:
        tok.save_pretrained(folder)
    return Tiny(folder, tower, t5, vision, proj)


def write_sharegpt4v(folder: Path) -> Tiny:
    """A tiny ShareGPT4V checkpoint (LLaVA code base format) and its tower
    (``<folder>-tower``, a vision model alone)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True)
    tower = folder.with_name(folder.name + "-tower")
    vision = write_tower(tower, whole_clip=False, seed=3)
    tok = _tokenizer(["<unk>", "<s>", "</s>"], "<s> $A")
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, bos_token_id=1, eos_token_id=2,
        pad_token_id=0, tie_word_embeddings=False, max_position_embeddings=256,
    )  # fmt: skip
    torch.manual_seed(4)
    lm = LlamaForCausalLM(config).eval()
    proj = _projector(16, 16, seed=5)
    state = dict(lm.state_dict())
    state.update({f"model.mm_projector.{k}": v for k, v in proj.state_dict().items()})
    torch.manual_seed(6)  # a stale tower copy: the reference reads the tower's own folder
    state.update({
        f"model.vision_tower.vision_tower.vision_model.{k}": torch.randn_like(v)
        for k, v in vision.state_dict().items()
    })  # fmt: skip
    for i in range(config.num_hidden_layers):
        state[f"model.layers.{i}.self_attn.rotary_emb.inv_freq"] = torch.ones(4)
    _save_shards(state, folder)
    _write_config(folder, {
        **config.to_dict(), "model_type": "share4v",
        "architectures": ["Share4VLlamaForCausalLM"], "mm_vision_tower": str(tower),
        "mm_hidden_size": 16, "mm_projector_type": "mlp2x_gelu", "mm_vision_select_layer": -2,
        "mm_vision_select_feature": "patch", "mm_use_im_start_end": False,
        "mm_use_im_patch_token": False, "image_aspect_ratio": "pad", "use_mm_proj": True,
    })  # fmt: skip
    tok.save_pretrained(folder)
    return Tiny(folder, tower, lm, vision, proj)

"""Tiny random dual encoders in the Hugging Face formats (CLIP, SigLIP), and their direct tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders.backends import optional_import
from builders.tiny_text_models import WORDS

torch = optional_import("torch")
T = optional_import("transformers")

CHARS = sorted(set("".join(WORDS)) | set("abcdefghijklmnopqrstuvwxyz.,:"))


def clip_tokenizer() -> Any:
    """CLIP's BPE (lowercasing, `</w>` word ends) over single characters, no merges."""
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in CHARS:
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    return T.CLIPTokenizer(vocab=vocab, merges=[])


def gemma_tokenizer(cls: str = "GemmaTokenizer") -> Any:
    """Gemma's BPE over single characters. `GemmaTokenizer` (what the FixRes SigLIP 2
    checkpoints, model_type siglip, name) is case-sensitive, so text that is not lowercased
    shows up as <unk>; `Siglip2Tokenizer` lowercases itself. (SigLIP 1's T5 SentencePiece
    tokenizer needs sentencepiece, not installed here.)"""
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<mask>": 4, "▁": 5}
    for c in CHARS:
        vocab[c] = len(vocab)
    return getattr(T, cls)(vocab=vocab, merges=[])


GEMMA_IDS = {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2}


# -- tiny models --------------------------------------------------------------------------------
def _tower(**extra: Any) -> dict[str, Any]:
    base = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=2)
    return {**base, **extra}


def _vit(**extra: Any) -> dict[str, Any]:
    return _tower(image_size=32, patch_size=8, **extra)


def _save(folder: Path, model: Any, tokenizer: Any, processor: Any) -> Path:
    """Save model + tokenizer + image processor. The weights are perturbed first: the standard
    init has zero biases, zero BLIP-2 query tokens and BLIP vision weights of scale 1e-10, which
    would make the image embeddings (nearly) independent of the image; convolution kernels get
    a He init (ALIGN's EfficientNet would otherwise lose the image's signal on the way)."""
    folder.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 4:
                torch.nn.init.kaiming_normal_(p)
            else:
                p.add_(torch.randn_like(p) * 0.05)
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def write_clip(folder: Path, seed: int = 0) -> Path:
    tok = clip_tokenizer()
    torch.manual_seed(seed)
    cfg = T.CLIPConfig(
        text_config=_tower(
            vocab_size=len(tok), max_position_embeddings=24, bos_token_id=0, eos_token_id=1
        ),
        vision_config=_vit(),
        projection_dim=16,
    )
    proc = T.CLIPImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    )
    return _save(folder, T.CLIPModel(cfg), tok, proc)


def write_siglip(folder: Path, seed: int = 0) -> Path:
    tok = gemma_tokenizer()
    torch.manual_seed(seed)
    cfg = T.SiglipConfig(
        text_config=_tower(vocab_size=len(tok), max_position_embeddings=64, **GEMMA_IDS),
        vision_config=_vit(),
    )
    proc = T.SiglipImageProcessorPil(size={"height": 32, "width": 32})
    return _save(folder, T.SiglipModel(cfg), tok, proc)


def direct_tokens(family: str, folder: Path, texts: list[str], max_length: int | None = None):
    """The family's documented text preprocessing, written out by hand."""
    tok = T.AutoTokenizer.from_pretrained(str(folder))
    tok.padding_side = "right"
    cfg = json.loads((folder / "config.json").read_text())
    sub = cfg["qformer_config" if family == "blip2" else "text_config"]
    positions = sub["max_position_embeddings"] - (2 if family == "altclip" else 0)
    default = {"siglip": 64, "siglip2": 64, "align": 64, "flava": 77, "blip": 35, "blip2": 32}
    limit = max_length or min(positions, default.get(family, positions))
    if family in ("siglip", "siglip2"):
        texts = [t.lower() for t in texts]
    padding: Any = True if family in ("clip", "altclip") else "max_length"
    enc = tok(texts, padding=padding, truncation=True, max_length=limit, return_tensors="pt")
    if family in ("siglip", "siglip2"):  # trained without a padding mask
        return {"input_ids": enc["input_ids"]}
    return dict(enc)


TINY_OPENCLIP_CFG: dict[str, Any] = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def write_tiny_openclip(folder: Path, name: str, seed: int = 0) -> str:
    """A random tiny open_clip CLIP (32-px ViT, width 32, one layer per tower) as the custom
    architecture file `folder/NAME.json` and the checkpoint `folder/init.pt`: its spec."""
    oc = optional_import("open_clip")
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / f"{name}.json"
    cfg.write_text(json.dumps(TINY_OPENCLIP_CFG))
    oc.add_model_config(folder)
    torch.manual_seed(seed)
    torch.save(oc.create_model(name).state_dict(), folder / "init.pt")
    return f"openclip:{cfg}@{folder / 'init.pt'}?quick_gelu=false"

"""A tiny random BLIP image-text matching model written to a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders.backends import optional_import
from builders.tiny_text_models import wordpiece_tokenizer

torch = optional_import("torch")


_WORDS = "a the cat dog red blue ball box on table man horse rides chases small big"


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", "[ENC]", *_WORDS.split(), "##s"]


H = 32  # hidden size of every tiny tower


IMAGE = 32  # image_size of every tiny vision tower


INIT = 0.5  # large random weights, so that scores vary clearly with the image and the text


def _tokenizer(folder: Path) -> Any:
    return wordpiece_tokenizer(folder, VOCAB)


def _tower(layers: int = 2) -> dict[str, int]:
    return {
        "hidden_size": H,
        "num_hidden_layers": layers,
        "num_attention_heads": 2,
        "intermediate_size": 37,
        "initializer_range": INIT,
    }


def write_tiny_blip(folder: Path, seed: int = 0) -> Path:
    """Saved in the hub layout: preprocessor_config.json + tokenizer files, no processor file."""
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessorPil

    text = {
        **_tower(),
        "vocab_size": len(VOCAB),
        "encoder_hidden_size": H,
        "max_position_embeddings": 64,
        "bos_token_id": VOCAB.index("[DEC]"),
        "pad_token_id": 0,
        "sep_token_id": VOCAB.index("[SEP]"),
        "eos_token_id": VOCAB.index("[SEP]"),
    }
    config = BlipConfig(
        text_config=text,
        vision_config={**_tower(), "image_size": IMAGE, "patch_size": 8},
        image_text_hidden_size=16,
        projection_dim=16,
        initializer_range=INIT,
    )
    torch.manual_seed(seed)
    BlipForImageTextRetrieval(config).eval().save_pretrained(folder)
    BlipImageProcessorPil(size={"height": IMAGE, "width": IMAGE}).save_pretrained(folder)
    _tokenizer(folder).save_pretrained(folder)
    return folder

"""Tiny random text models written to a folder: BERT, a sentence-transformers wrapper, Llama."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

_WORDS = (
    "a the cat dog chases is chased by red blue ball box and man horse rides carries small "
    "tiny large sleeps sleeping green apples on table lie query passage instruct retrieve "
    "similar text : . ,"
)


WORDS = _WORDS.split()


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "</s>", *WORDS, "##s", "##ing"]


TEXTS = [
    "A cat chases a dog.",
    "A man rides a horse and a small dog chases a red ball by the table.",
    "Dogs",
    "green apples lie on a table",
    "A red ball and a blue box.",
]


def wordpiece_tokenizer(folder: Path, vocab: Sequence[str] = VOCAB, **kwargs: Any) -> Any:
    """A `BertTokenizerFast` over `vocab`, its vocabulary file written beside `folder`
    (`<folder>-vocab.txt`, so that the folder holds only what save_pretrained writes);
    `kwargs` go to the tokenizer (`padding_side`, `eos_token`)."""
    from transformers import BertTokenizerFast

    folder.parent.mkdir(parents=True, exist_ok=True)
    vocab_file = folder.parent / f"{folder.name}-vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return BertTokenizerFast(vocab=str(vocab_file), **kwargs)


def write_tiny_bert(
    folder: Path, *, seed: int = 0, eos_token: str | None = None, padding_side: str = "right"
) -> Path:
    """A 2-layer BERT (hidden 32) with a WordPiece tokenizer, saved with save_pretrained."""
    import torch
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True, exist_ok=True)
    kwargs = {"eos_token": eos_token} if eos_token else {}
    tok = wordpiece_tokenizer(folder, padding_side=padding_side, **kwargs)
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    BertModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_tiny_st(
    folder: Path, bert: Path, *, pooling: str = "mean", normalize: bool = False
) -> Path:
    """A SentenceTransformer (Transformer + Pooling [+ Normalize]) over a tiny BERT, saved."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    tr = Transformer(str(bert))
    modules = [tr, Pooling(tr.get_embedding_dimension(), pooling_mode=pooling)]
    if normalize:
        modules.append(Normalize())
    SentenceTransformer(modules=modules, device="cpu").save(str(folder))
    return folder


def write_tiny_llama(folder: Path, *, seed: int = 0) -> Path:
    """A 2-layer causal Llama with a word-level tokenizer that has EOS but no pad token and does
    not append EOS itself (like Llama/Mistral tokenizers)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaModel, PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="</s>", unk_token="[UNK]")
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        intermediate_size=37,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    LlamaModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder

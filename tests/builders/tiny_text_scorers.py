"""Tiny random text scorers written to a folder: GPT-2 (perplexity), Vera (plausibility),
a CoLA classifier."""

from __future__ import annotations

from pathlib import Path

from builders.backends import optional_import
from builders.tiny_text_models import VOCAB, WORDS, wordpiece_tokenizer
from lexsem.models.backends.vera import VERA_TEMPERATURE_ROW, VERA_WEIGHT_ROW

torch = optional_import("torch")

LM_VOCAB = ["[PAD]", "[UNK]", "<s>", "</s>", *WORDS]


# -- tiny model builders -------------------------------------------------------------------------
def _word_tokenizer(vocab: list[str], *, prepend: str | None = None, append: str | None = None):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    ids = {w: i for i, w in enumerate(vocab)}
    tk = Tokenizer(models.WordLevel(ids, unk_token=vocab[1]))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    if prepend or append:
        single = " ".join(x for x in (prepend, "$A", append) if x)
        specials = [(t, ids[t]) for t in (prepend, append) if t]
        tk.post_processor = processors.TemplateProcessing(single=single, special_tokens=specials)
    return tk


def write_tiny_gpt2(folder: Path, *, seed: int = 0, prepend_bos: bool = False) -> Path:
    """A 2-layer GPT-2 (n_embd 32) with a word-level tokenizer that has a pad token; like GPT-2
    it adds no special tokens, or with `prepend_bos` it prepends <s> like Llama's."""
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tk = _word_tokenizer(LM_VOCAB, prepend="<s>" if prepend_bos else None)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="[UNK]",
        pad_token="[PAD]",
    )
    torch.manual_seed(seed)
    cfg = GPT2Config(
        vocab_size=len(LM_VOCAB),
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=2,
        eos_token_id=3,
    )
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


VERA_VOCAB = ["<pad>", "<unk>", "</s>", *WORDS]


def write_tiny_vera(folder: Path, *, seed: int = 0, vocab_size: int = 32128) -> Path:
    """A 2-layer T5 encoder (d_model 16) whose `shared.weight` rows 32097-32099 hold a Vera-style
    head (temperature 0.5), with a tokenizer that appends </s> like T5's."""
    from transformers import PreTrainedTokenizerFast, T5Config, T5EncoderModel

    tk = _word_tokenizer(VERA_VOCAB, append="</s>")
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    torch.manual_seed(seed)
    cfg = T5Config(
        vocab_size=vocab_size,
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=2,
        num_heads=2,
        feed_forward_proj="gated-gelu",
        pad_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=0,
    )
    model = T5EncoderModel(cfg).eval()
    if vocab_size > VERA_WEIGHT_ROW:
        with torch.no_grad():
            model.shared.weight[VERA_TEMPERATURE_ROW, 0] = 0.5
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_tiny_cola(
    folder: Path, *, seed: int = 0, id2label: dict[int, str] | None = None, num_labels: int = 2
) -> Path:
    """A 2-layer DistilBERT sequence classifier (dim 32) with a WordPiece tokenizer that returns
    token_type_ids (which DistilBERT does not take)."""
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    folder.mkdir(parents=True, exist_ok=True)
    tok = wordpiece_tokenizer(folder)
    torch.manual_seed(seed)
    extra = {}
    if id2label:
        extra = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}}
    cfg = DistilBertConfig(
        vocab_size=len(VOCAB),
        dim=32,
        n_layers=2,
        n_heads=2,
        hidden_dim=37,
        max_position_embeddings=64,
        num_labels=num_labels,
        **extra,
    )
    DistilBertForSequenceClassification(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder

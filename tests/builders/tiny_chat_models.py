"""Tiny random chat models written to a folder: a causal LM (Llama or Qwen2) with a word-level
tokenizer (a `tokenizers` vocabulary) and a chat template, for the `chat:` backend."""

from __future__ import annotations

from pathlib import Path

from builders.tiny_text_models import WORDS

SPECIALS = ["<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_VOCAB = [*SPECIALS, *WORDS, "dogs", "cats", "two", "in", "paris", "sofa", "bus", "tree"]

# each turn: its role marker, its text, an end marker; the reply starts after <|assistant|>
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'user' %}<|user|> {% else %}<|assistant|> {% endif %}"
    "{{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def write_tiny_chat(
    folder: Path,
    *,
    family: str = "llama",
    seed: int = 0,
    hidden: int = 32,
    layers: int = 2,
    vocab_size: int = 64,
) -> Path:
    """A random causal LM (`family` llama or qwen2) with a chat template; its tokenizer has no
    pad token (like Llama's: the backend pads with EOS)."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(CHAT_VOCAB)}, unk_token="<unk>"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tk.add_special_tokens(SPECIALS)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    common = dict(
        vocab_size=vocab_size,  # 64: room for a token a family's tokenizer class adds (Qwen2)
        hidden_size=hidden,
        intermediate_size=2 * hidden + 5,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    if family == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**common))
    elif family == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        model = Qwen2ForCausalLM(Qwen2Config(**common))
    else:
        raise ValueError(f"unknown family {family!r}")
    # larger weights than the init's: varied greedy answers rather than one repeated token
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder

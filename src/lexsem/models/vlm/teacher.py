"""Teacher-forced log-probabilities of continuations after prompts, all with one image.

`continuation_logprobs(model, processor, layout, image, rows)` returns, per (prompt,
continuation) row, the log-probability (float64) of each of the continuation's own tokens,
with the image. The continuation's tokens are found by encoding prompt and continuation
together (the boundary is tokenized as the model sees it): the prompt's own encoding must be a
prefix of the whole, else a `ModelError` (the score would be of other tokens). An end-of-text
token the tokenizer appends is not part of the continuation.

Rows are encoded in one batch, right-padded with an attention mask, every input the processor
makes is passed to the model (``token_type_ids`` of Gemma 3, ``mm_token_type_ids`` of
Qwen-VL, ``image_sizes``, ``image_grid_thw``, ``pixel_attention_mask``), and only the rows'
needed positions are turned into log-probabilities. A continuation of one token is read from
its prompt's last position, so rows that share a prompt (an answer and its variants) share one
sequence. For causal models the image and the part of the prompt every row shares are computed
once (`lexsem.models.vlm.prefix`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.vlm.layout import Layout

__all__ = ["Read", "continuation_ids", "continuation_logprobs", "model_inputs"]


@dataclass(frozen=True)
class Read:
    """Where one row's log-probabilities are: sequence `seq`, the continuation's token ids, and
    whether they are read from the sequence's last position only (a one-token continuation
    after a prompt-only sequence)."""

    seq: int
    ids: tuple[int, ...]
    last_only: bool


def special_tokens(tokenizer: Any, text: str) -> dict[str, Any]:
    """Tokenizer arguments for `text`: no second begin-of-text token when a chat template wrote
    one already (Gemma 3's template starts with `<bos>`, and its tokenizer would add another:
    `apply_chat_template(tokenize=True)` does the same)."""
    bos = getattr(tokenizer, "bos_token", None)
    return {"add_special_tokens": False} if bos and text.startswith(bos) else {}


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, **special_tokens(tokenizer, text))["input_ids"])


def continuation_ids(tokenizer: Any, prompt: str, full: str) -> list[int]:
    p, f = _ids(tokenizer, prompt), _ids(tokenizer, full)
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is not None and p and p[-1] == eos and f and f[-1] == eos:
        p, f = p[:-1], f[:-1]  # a tokenizer that appends </s>: the text's own tokens
    if f[: len(p)] != p:
        raise ModelError(
            f"the prompt's tokens are not a prefix of prompt + continuation (they end "
            f"{p[-3:]}, prompt + continuation has {f[len(p) - 3 : len(p)]} there): {full[-80:]!r}"
        )
    if len(f) == len(p):
        raise ModelError(f"the continuation of {full[-80:]!r} has no tokens of its own")
    return f[len(p) :]


def plan_sequences(
    tokenizer: Any, layout: Layout, rows: Sequence[tuple[str, str]]
) -> tuple[list[str], list[str], list[Read]]:
    """The unique texts to run (causal layout), the prompt each text starts with, and where
    each row's log-probabilities are."""
    texts: dict[str, int] = {}
    prompts: list[str] = []
    reads = []
    for prompt, cont in rows:
        full = prompt + layout.separator(prompt) + cont
        ids = continuation_ids(tokenizer, prompt, full)
        text = prompt if len(ids) == 1 else full
        if text not in texts:
            texts[text] = len(texts)
            prompts.append(prompt)
        reads.append(Read(texts[text], tuple(ids), len(ids) == 1))
    return list(texts), prompts, reads


def model_inputs(enc: Any, model: Any, device: Any) -> dict[str, Any]:
    """The processor's outputs as model inputs: floating tensors in the model's dtype (bf16 /
    fp16 weights get bf16 / fp16 pixels), everything on the model's device."""
    dtype = next(model.parameters()).dtype
    out = {}
    for key, value in dict(enc).items():
        if hasattr(value, "is_floating_point") and value.is_floating_point():
            value = value.to(dtype)
        out[key] = value.to(device) if hasattr(value, "to") else value
    return out


def _gather(logits: Any, rows: Sequence[int], positions: Sequence[int], ids: Sequence[int]) -> Any:
    """log_softmax (float64) at (row, position) of each wanted token, for those positions only."""
    import torch

    picked = logits[torch.as_tensor(list(rows)), torch.as_tensor(list(positions))]
    logp = torch.log_softmax(picked.to(torch.float64), dim=-1)
    return logp[torch.arange(len(ids)), torch.as_tensor(list(ids))].cpu().numpy()


def read_out(logits: Any, ends: Sequence[int], ids: Any, reads: Sequence[Read]) -> list[Any]:
    """Each row's log-probabilities from `logits` of its sequence (which ends, exclusive, at
    `ends[seq]`); a multi-token continuation must be the last tokens of its sequence."""
    rows, positions, tokens, sizes = [], [], [], []
    for r in reads:
        end, k = ends[r.seq], len(r.ids)
        if r.last_only:
            rows.append(r.seq), positions.append(end - 1), tokens.append(r.ids[0])
        else:
            if [int(t) for t in ids[r.seq][end - k : end]] != list(r.ids):
                raise ModelError("the continuation's tokens are not the end of its sequence")
            rows += [r.seq] * k
            positions += range(end - k - 1, end - 1)
            tokens += r.ids
        sizes.append(k)
    flat = _gather(logits, rows, positions, tokens)
    return list(np.split(flat, np.cumsum(sizes)[:-1]))


def _causal_full(
    model: Any,
    processor: Any,
    layout: Layout,
    image: Any,
    texts: list[str],
    prompts: list[str],
    device: Any,
) -> Any:
    import torch

    images = layout.images(image, len(texts))
    kw = special_tokens(processor.tokenizer, texts[0])
    enc = processor(text=texts, images=images, return_tensors="pt", padding=True, **kw)
    if any(k.startswith("qformer") for k in enc):  # InstructBLIP: its Q-Former reads the
        asked = processor(text=prompts, images=images, return_tensors="pt", padding=True, **kw)
        enc.update({k: v for k, v in asked.items() if k.startswith("qformer")})  # prompt only
    inputs = model_inputs(enc, model, device)
    with torch.inference_mode():
        logits = model(**inputs).logits
    ends = inputs["attention_mask"].sum(dim=1).tolist()
    return logits, ends, inputs["input_ids"]


def continuation_logprobs(
    model: Any,
    processor: Any,
    layout: Layout,
    image: Any,
    rows: Sequence[tuple[str, str]],
    *,
    reuse: bool = True,
    device: Any = "cpu",
) -> list[Any]:
    """Per row (prompt, continuation), the continuation's per-token log-probabilities (float64
    arrays) after the prompt with `image` (see the module doc)."""
    if not rows:
        return []
    if layout.kind == "prefix_lm":
        return _prefix_lm(model, processor, image, rows, device)
    if layout.kind == "seq2seq":
        return _seq2seq(model, processor, image, rows, device)
    texts, prompts, reads = plan_sequences(processor.tokenizer, layout, rows)
    if reuse:
        from lexsem.models.vlm.prefix import shared_prefix_logits

        shared = shared_prefix_logits(model, processor, layout, image, texts, reads, device)
        if shared is not None:
            return read_out(*shared, reads)
    full = _causal_full(model, processor, layout, image, texts, prompts, device)
    return read_out(*full, reads)


def _prefix_lm(
    model: Any, processor: Any, image: Any, rows: Sequence[tuple[str, str]], device: Any
) -> list[Any]:
    """PaliGemma: the continuation is the processor's `suffix` (token type 1, causal); the end
    token the processor appends to a suffix is not part of it."""
    import torch

    prompts, conts = [p for p, _ in rows], [c for _, c in rows]
    enc = processor(
        text=prompts, images=[image] * len(rows), suffix=conts, return_tensors="pt", padding=True
    )
    enc.pop("labels", None)
    inputs = model_inputs(enc, model, device)
    with torch.inference_mode():
        logits = model(**inputs).logits
    tok = processor.tokenizer
    reads, ends = [], []
    for i, cont in enumerate(conts):
        ids = tok(cont, add_special_tokens=False)["input_ids"]
        kinds = inputs["token_type_ids"][i].tolist()
        start = kinds.index(1) if 1 in kinds else len(kinds)
        if not ids:
            raise ModelError(f"the continuation {cont!r} has no tokens of its own")
        reads.append(Read(i, tuple(ids), False))
        ends.append(start + len(ids))
    return read_out(logits, ends, inputs["input_ids"], reads)


def _seq2seq(
    model: Any, processor: Any, image: Any, rows: Sequence[tuple[str, str]], device: Any
) -> list[Any]:
    """Encoder-decoder LMs: the prompt is the encoder's input, the continuation's own tokens
    (no end-of-sequence token) the decoder's labels."""
    import torch

    prompts, conts = [p for p, _ in rows], [c for _, c in rows]
    enc = processor(text=prompts, images=[image] * len(rows), return_tensors="pt", padding=True)
    tok = processor.tokenizer
    ids = [list(tok(c, add_special_tokens=False)["input_ids"]) for c in conts]
    if any(not x for x in ids):
        raise ModelError("a continuation has no tokens of its own")
    width = max(len(x) for x in ids)
    labels = torch.full((len(ids), width), -100, dtype=torch.long)
    for i, x in enumerate(ids):
        labels[i, : len(x)] = torch.as_tensor(x)
    inputs = model_inputs(enc, model, device)
    with torch.inference_mode():
        logits = model(**inputs, labels=labels.to(device)).logits
    out = []
    for i, x in enumerate(ids):
        logp = torch.log_softmax(logits[i, : len(x)].to(torch.float64), dim=-1)
        out.append(logp[torch.arange(len(x)), torch.as_tensor(x)].cpu().numpy())
    return out

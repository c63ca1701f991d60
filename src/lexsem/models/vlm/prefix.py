"""The image and the shared start of every prompt, computed once for all candidates.

For an image with k candidate texts (three captions of a SugarCrepe++ triplet, the answer and
its variants, every caption an image is paired with anywhere in a run) the sequences differ only
after a common start: the chat template, the image's tokens and the question's opening words.
That start is run once with the image (batch of one, keeping its key/value cache); the k
remainders are then run as one batch on copies of the cache. The result equals running each
sequence whole (causal attention: a token's states depend only on the tokens before it; a test
checks every family to 1e-5).

The shared start is found on the tokenizer's own ids (the image placeholder unexpanded), then
mapped onto the processor's encoding of the first text, which expands the image; the
remainders are the tokenizer's ids after the start. This holds when the expansion happens
inside the start only and the other per-token inputs (``token_type_ids``,
``mm_token_type_ids``) are constant after it, which is checked: when it does not hold (or the
model cannot take a cache), `shared_prefix_logits` returns None and the caller runs the
sequences whole.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from lexsem.models.vlm.layout import Layout
from lexsem.models.vlm.sequences import InputTransform, Read, model_inputs, special_tokens

__all__ = ["shared_prefix_logits"]

_SEQUENCE_KEYS = ("input_ids", "attention_mask")


def _common(seqs: Sequence[Sequence[int]]) -> int:
    first, n = seqs[0], min(len(s) for s in seqs)
    for i in range(n):
        if any(s[i] != first[i] for s in seqs):
            return i
    return n


def _start_length(toks: list[list[int]], reads: Sequence[Read]) -> int:
    """The shared start's length in tokenizer ids: common to all, and ending before every row's
    first needed position (its last-position logits are the only ones of the start we keep)."""
    need = {r.seq: len(r.ids) for r in reads if not r.last_only}
    cap = min(len(t) - max(need.get(j, 1), 1) for j, t in enumerate(toks))
    return min(_common(toks), cap)


def _per_token(enc: Any, length: int) -> dict[str, Any]:
    return {
        k: v
        for k, v in enc.items()
        if k not in _SEQUENCE_KEYS and hasattr(v, "dim") and v.dim() == 2
        and v.shape == (1, length)
    }  # fmt: skip


def _suffix_fill(per_token: dict[str, Any], start: int) -> dict[str, int] | None:
    """The constant value of each per-token input after the start (None: not constant)."""
    fill = {}
    for key, value in per_token.items():
        tail = value[0, start:]
        if tail.numel() == 0 or not bool((tail == tail[0]).all()):
            return None
        fill[key] = int(tail[0])
    return fill


def _remainders(toks: list[list[int]], c: int, pad: int) -> tuple[Any, Any]:
    import torch

    rest = [t[c:] for t in toks]
    width = max(len(r) for r in rest)
    ids = torch.full((len(rest), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rest), width), dtype=torch.long)
    for i, r in enumerate(rest):
        ids[i, : len(r)] = torch.as_tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask


@functools.cache
def _cache_argument(model_class: type) -> str:
    """The forward argument taking a key/value cache: `cache` in recent transformers,
    `past_key_values` before (read once per model class)."""
    import inspect

    params = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(output: Any) -> Any:
    for name in ("cache", "past_key_values"):
        if (value := getattr(output, name, None)) is not None:
            return value
    return None


def shared_prefix_logits(
    model: Any,
    processor: Any,
    layout: Layout,
    image: Any,
    texts: list[str],
    reads: Sequence[Read],
    device: Any,
    transform: InputTransform | None = None,
) -> tuple[Any, list[int], Any] | None:
    """(logits, sequence ends, ids) as if every text had been run whole, in the coordinates of
    each text's remainder after the start; None when the start cannot be shared (see the
    module doc)."""
    import torch

    tok = processor.tokenizer
    kw = special_tokens(tok, texts[0])
    toks = [list(tok(t, **kw)["input_ids"]) for t in texts]
    c = _start_length(toks, reads)
    if c < 1:
        return None
    enc = processor(text=texts[:1], images=[image], return_tensors="pt", **kw)
    if any(k.startswith("qformer") for k in enc):
        return None  # InstructBLIP: the image's query tokens depend on the whole prompt
    full = enc["input_ids"][0].tolist()
    start = c + len(full) - len(toks[0])  # the start in the expanded sequence
    if full[start:] != toks[0][c:] or layout.image_token_ids & set(full[start:]):
        return None
    fill = _suffix_fill(_per_token(enc, len(full)), start)
    if fill is None:
        return None
    inputs = model_inputs(enc, model, device, transform)
    for key in (*_SEQUENCE_KEYS, *fill):
        inputs[key] = inputs[key][:, :start]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids, mask = _remainders(toks, c, pad)
    n = len(texts)
    with torch.inference_mode():
        head = model(**inputs, use_cache=True)
        cache = _cache_of(head)
        if cache is None or not hasattr(cache, "batch_repeat_interleave"):
            return None
        cache.batch_repeat_interleave(n)
        rest = {k: torch.full(ids.shape, v, dtype=inputs[k].dtype) for k, v in fill.items()}
        # no attention mask: the remainders are right-padded, so a real token never sees a pad
        # (causal attention), and models that derive positions from a mask (Qwen-VL's 3-D
        # rope) would count the cached start again
        tail = model(
            input_ids=ids.to(device), **{_cache_argument(type(model)): cache},
            **{k: v.to(device) for k, v in rest.items()},
        )  # fmt: skip
    logits = torch.cat([head.logits[:, -1:].expand(n, -1, -1), tail.logits], dim=1)
    # position 0 of `logits` is the start's last token; remainder token j is at j + 1
    ends = [1 + int(m) for m in mask.sum(dim=1)]
    seq_ids = torch.cat([torch.full((n, 1), -1, dtype=ids.dtype), ids], dim=1)
    return logits, ends, seq_ids

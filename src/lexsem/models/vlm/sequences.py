"""The token sequences of (prompt, continuation) rows and where each row's log-probabilities are
read: the continuation's own tokens (the prompt's encoding must be a prefix of prompt +
continuation), the unique texts to run, the processor's outputs as model inputs, and the
float64 log-probabilities read out of a batch's logits (an `InputTransform` may replace the
processor's outputs in place before they become model inputs: the blind VGPTScore's noise,
`lexsem.models.vlm.noise`). Shared by the whole-sequence path
(`lexsem.models.vlm.teacher`) and the shared-prompt-start path (`lexsem.models.vlm.prefix`).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.vlm.layout import Layout

__all__ = [
    "InputTransform",
    "Read",
    "continuation_ids",
    "model_inputs",
    "plan_sequences",
    "read_out",
    "special_tokens",
]


#: Changes a processor's outputs in place before they become model inputs.
InputTransform = Callable[[MutableMapping[str, Any]], None]


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


def model_inputs(
    enc: Any, model: Any, device: Any, transform: InputTransform | None = None
) -> dict[str, Any]:
    """The processor's outputs as model inputs: `transform` applied to them first (if any),
    floating tensors in the model's dtype (bf16 / fp16 weights get bf16 / fp16 pixels),
    everything on the model's device."""
    if transform is not None:
        transform(enc)
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

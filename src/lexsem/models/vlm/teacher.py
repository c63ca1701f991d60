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
once (`lexsem.models.vlm.prefix`). `transform` changes the processor's outputs before the
model sees them (the blind VGPTScore's noise in the model's input space).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.vlm import prefix
from lexsem.models.vlm.layout import Layout
from lexsem.models.vlm.sequences import (
    InputTransform,
    Read,
    model_inputs,
    plan_sequences,
    read_out,
    special_tokens,
)

__all__ = ["continuation_logprobs"]


def _causal_full(
    model: Any,
    processor: Any,
    layout: Layout,
    image: Any,
    texts: list[str],
    prompts: list[str],
    device: Any,
    transform: InputTransform | None = None,
) -> Any:
    import torch

    images = layout.images(image, len(texts))
    kw = special_tokens(processor.tokenizer, texts[0])
    enc = processor(text=texts, images=images, return_tensors="pt", padding=True, **kw)
    if any(k.startswith("qformer") for k in enc):  # InstructBLIP: its Q-Former reads the
        asked = processor(text=prompts, images=images, return_tensors="pt", padding=True, **kw)
        enc.update({k: v for k, v in asked.items() if k.startswith("qformer")})  # prompt only
    inputs = model_inputs(enc, model, device, transform)
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
    transform: InputTransform | None = None,
) -> list[Any]:
    """Per row (prompt, continuation), the continuation's per-token log-probabilities (float64
    arrays) after the prompt with `image` (see the module doc)."""
    if not rows:
        return []
    by_kind = _ONE_PASS.get(layout.kind)
    if by_kind is not None:
        return by_kind(_Batch(model, processor, image, rows, device, transform))
    texts, prompts, reads = plan_sequences(processor.tokenizer, layout, rows)
    if reuse:
        shared = prefix.shared_prefix_logits(
            model, processor, layout, image, texts, reads, device, transform
        )
        if shared is not None:
            return read_out(*shared, reads)
    full = _causal_full(model, processor, layout, image, texts, prompts, device, transform)
    return read_out(*full, reads)


@dataclass(frozen=True)
class _Batch:
    """The rows of one image, as a layout that reads them in one forward pass gets them."""

    model: Any
    processor: Any
    image: Any
    rows: Sequence[tuple[str, str]]
    device: Any
    transform: InputTransform | None

    def encode(self, **extra: Any) -> Any:
        """The processor's batch of the rows' prompts, each with the image."""
        return self.processor(
            text=[p for p, _ in self.rows], images=[self.image] * len(self.rows),
            return_tensors="pt", padding=True, **extra,
        )  # fmt: skip

    def forward(self, enc: Any, **extra: Any) -> tuple[Any, Any]:
        """(the model's inputs from `enc`, the logits the model gives them)."""
        import torch

        inputs = model_inputs(enc, self.model, self.device, self.transform)
        with torch.inference_mode():
            return inputs, self.model(**inputs, **extra).logits


def _prefix_lm(batch: _Batch) -> list[Any]:
    """PaliGemma: the continuation is the processor's `suffix` (token type 1, causal); the end
    token the processor appends to a suffix is not part of it."""
    conts = [c for _, c in batch.rows]
    enc = batch.encode(suffix=conts)
    enc.pop("labels", None)
    inputs, logits = batch.forward(enc)
    tok = batch.processor.tokenizer
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


def _seq2seq(batch: _Batch) -> list[Any]:
    """Encoder-decoder LMs: the prompt is the encoder's input, the continuation's own tokens
    (no end-of-sequence token) the decoder's labels."""
    import torch

    enc = batch.encode()
    tok = batch.processor.tokenizer
    ids = [list(tok(c, add_special_tokens=False)["input_ids"]) for _, c in batch.rows]
    if any(not x for x in ids):
        raise ModelError("a continuation has no tokens of its own")
    width = max(len(x) for x in ids)
    labels = torch.full((len(ids), width), -100, dtype=torch.long)
    for i, x in enumerate(ids):
        labels[i, : len(x)] = torch.as_tensor(x)
    _, logits = batch.forward(enc, labels=labels.to(batch.device))
    out = []
    for i, x in enumerate(ids):
        logp = torch.log_softmax(logits[i, : len(x)].to(torch.float64), dim=-1)
        out.append(logp[torch.arange(len(x)), torch.as_tensor(x)].cpu().numpy())
    return out


# the layouts whose rows are read in one forward pass of the model
_ONE_PASS: dict[str, Callable[[_Batch], list[Any]]] = {"prefix_lm": _prefix_lm, "seq2seq": _seq2seq}

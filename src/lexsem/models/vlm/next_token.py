"""The probability a generative VLM's greedy decoding gives a token as its first reply token,
after prompts that all show one image: what `generate(max_new_tokens=1, do_sample=False,
output_scores=True)` scores, read as `softmax(scores[0])[token]` (the VQAScore reference's
Qwen2-VL, LLaVA-OneVision and PaliGemma models; `lexsem.models.vlm.reference`).

The prompts run as one right-padded batch with every input the processor makes; each row's
logits at its last prompt position go through the model's generation config's repetition
penalty (transformers' `RepetitionPenaltyLogitsProcessor` over the row's input ids, the one
processor greedy `generate` applies from the released generation configs of these families:
Qwen2-VL-Instruct ships `repetition_penalty` 1.05), then a float64 log-softmax.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lexsem.models.vlm.layout import Layout
from lexsem.models.vlm.sequences import model_inputs, special_tokens

__all__ = ["first_token_logprobs", "repetition_penalty"]


def repetition_penalty(model: Any) -> float:
    """The model's generation config's repetition penalty (1.0: none)."""
    config = getattr(model, "generation_config", None)
    value = getattr(config, "repetition_penalty", None)
    return 1.0 if value is None else float(value)


def first_token_logprobs(
    model: Any,
    processor: Any,
    layout: Layout,
    image: Any,
    prompts: Sequence[str],
    token_ids: Sequence[int],
    device: Any = "cpu",
) -> np.ndarray:
    """log P(first reply token = `token_ids[i]`) after `prompts[i]` with `image`, as greedy
    generation scores it (see the module doc); float64."""
    import torch
    from transformers import RepetitionPenaltyLogitsProcessor

    if not prompts:
        return np.zeros(0)
    kw = special_tokens(processor.tokenizer, prompts[0])
    images = layout.images(image, len(prompts))
    enc = processor(text=list(prompts), images=images, return_tensors="pt", padding=True, **kw)
    inputs = model_inputs(enc, model, device)
    with torch.inference_mode():
        logits = model(**inputs).logits
    ends = inputs["attention_mask"].sum(dim=1).tolist()
    penalty = repetition_penalty(model)
    out = np.zeros(len(prompts))
    for i, end in enumerate(ends):
        scores = logits[i : i + 1, end - 1].float()
        if penalty != 1.0:
            ids = inputs["input_ids"][i : i + 1, :end]
            scores = RepetitionPenaltyLogitsProcessor(penalty)(ids, scores)
        logp = torch.log_softmax(scores[0].to(torch.float64), dim=-1)
        out[i] = float(logp[int(token_ids[i])])
    return out

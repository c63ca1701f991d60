"""The token length a model's texts are truncated to.

`max_length` when the spec sets it (refused when it exceeds the model's text positions), else the
smallest of the tokenizer's own limit, the model's text positions and a backend default.
"""

from __future__ import annotations

from typing import Any

from lexsem.errors import ModelError

HUGE = 10**9  # tokenizers without a limit report ~1e30


def tokenizer_limit(tokenizer: Any) -> int | None:
    """The tokenizer's `model_max_length`, or None when it sets no real limit."""
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, (int, float)) and 0 < limit < HUGE:
        return int(limit)
    return None


def text_limit(
    name: str,
    max_length: int | None,
    tokenizer: Any,
    positions: Any,
    default: int | None = None,
) -> int | None:
    """`max_length`, else min(tokenizer limit, `positions`, `default`), None when none is known.
    `positions`: the model's text position count (anything but a positive int: unknown)."""
    positions = positions if isinstance(positions, int) and positions > 0 else None
    if max_length is not None:
        if positions is not None and max_length > positions:
            raise ModelError(
                f"{name}: max_length={max_length} exceeds the model's {positions} text positions"
            )
        return max_length
    limits = [x for x in (tokenizer_limit(tokenizer), positions, default) if x]
    return min(limits) if limits else None


def padded_batch(tokenizer: Any, texts: list[str], limit: int | None) -> Any:
    """`texts` tokenized as one padded batch of torch tensors, truncated to `limit` tokens (None:
    not truncated)."""
    return tokenizer(
        texts,
        padding=True,
        truncation=limit is not None,
        max_length=limit,
        return_tensors="pt",
    )

"""`LazyTextScorer`: the `TextScorer` part the blind text scorers share (lm, vera, cola).

They score a caption on its own, without any image ("The Role of Linguistic Priors in Measuring
Compositional Generalization of Vision-Language Models", §4; SugarCrepe++ App. I).
On top of `LazyModel` (spec, source, lazy weights, fingerprint): the tokenizer, the token limit
(`max_length`, else the tokenizer's limit capped by the model's positions), and `score_texts`.
Scores are float64 arrays of shape (n,). Texts are right-padded with an attention mask and scored
in length-sorted batches, so a text's score does not depend on which other texts share its batch
(nor on `batch_size`) beyond float rounding. Weights are loaded on the first `score_texts`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.lazy import LazyModel
from lexsem.models.text_limit import padded_batch, text_limit


class LazyTextScorer(LazyModel):
    """Base class: subclasses set `backend`, `lower_is_better` and `options`, and implement
    `_load` (sets `self._tokenizer` and `self._limit`, returns the model), `_score_batch` and
    `_fingerprint_options`."""

    lower_is_better: ClassVar[bool] = False
    _not_pickled = ("_model", "_tokenizer")

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self._tokenizer: Any = None
        self._limit: int | None = None
        self._takes_token_types = False  # whether the model's forward takes token_type_ids

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "lower_is_better": self.lower_is_better}

    # -- the TextScorer protocol ----------------------------------------------------------------
    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """float64 scores, shape (len(texts),); loads the model first."""
        out = self._inference(texts, batch_size, "score_texts", self._score_all)
        if out.shape != (len(texts),):
            raise ModelError(f"{self.name}: got {out.shape} scores for {len(texts)} texts")
        return out

    # -- helpers for subclasses -----------------------------------------------------------------
    def _inference(
        self,
        texts: Sequence[str],
        batch_size: int,
        what: str,
        run: Callable[[list[str], int], np.ndarray],
    ) -> np.ndarray:
        """`run(texts, batch_size)` as float64, under inference mode with the model loaded
        (`texts` checked for the method `what`; no texts: nothing loaded)."""
        items = checked_texts(texts, batch_size, what)
        if not items:
            return np.zeros((0,), dtype=np.float64)
        self._ensure_loaded()
        import torch

        with torch.inference_mode():
            return np.asarray(run(items, batch_size), dtype=np.float64)

    def _load_tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        tokenizer = self._from_pretrained(AutoTokenizer)
        tokenizer.padding_side = "right"  # our own instance
        return tokenizer

    def _resolve_limit(self, tokenizer: Any, config: Any) -> int | None:
        """`max_length`, else the tokenizer's limit capped by the model's position count."""
        positions = getattr(config, "max_position_embeddings", None)
        return text_limit(self.name, self.max_length, tokenizer, positions)

    def _place(self, model: Any) -> Any:
        model.to(self.device)
        model.eval()
        return model

    def _score_all(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Score in batches of similar length (longest first), results in the input order."""
        return in_length_batches(texts, batch_size, self._score_batch)

    def _tokenize_padded(self, texts: list[str]) -> dict[str, Any]:
        """Right-padded, truncated to the limit, on the device; only the inputs the model takes."""
        enc = padded_batch(self._tokenizer, texts, self._limit)
        keep = {"input_ids", "attention_mask"}
        if "token_type_ids" in enc and self._takes_token_types:
            keep.add("token_type_ids")
        return {k: v.to(self.device) for k, v in enc.items() if k in keep}

    def _score_batch(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def in_length_batches(
    texts: list[str], batch_size: int, run: Callable[[list[str]], np.ndarray]
) -> np.ndarray:
    """`run(batch)` over batches of similar character length (longest first), as one float64
    array in the input order."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    out = np.full(len(texts), np.nan, dtype=np.float64)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        out[idx] = np.asarray(run([texts[i] for i in idx]))
    return out


def checked_texts(texts: Sequence[str], batch_size: int, what: str) -> list[str]:
    """`texts` as a list; TypeError for one string, ValueError for a bad batch size."""
    if isinstance(texts, str):
        raise TypeError(f"{what} takes a sequence of texts, not one string")
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return list(texts)


def takes_argument(model: Any, arg: str) -> bool:
    """Whether the model's `forward` takes the named argument."""
    try:
        return arg in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False

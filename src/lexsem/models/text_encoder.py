"""`LazyTextEncoder`: the `TextEncoder` part the embedding backends share (st, hf, clip, openclip).

On top of `LazyModel` (spec, source, lazy weights, fingerprint): the text formatting options
(`prefix` or `template`), `normalize`, and `encode`, which runs the texts longest first in
batches (`batch_order`) and returns the embeddings in the caller's order. The weights are loaded
on the first `encode`, so a run served entirely from the embedding cache never loads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.lazy import LazyModel
from lexsem.models.options import COMMON, TEXT_INPUT, Option


class LazyTextEncoder(LazyModel):
    """Base class: subclasses set `backend`, implement `_load` and `_encode_batches`, and may
    count tokens (`_token_lengths`) and add to `_fingerprint_options` (calling super's)."""

    options: ClassVar[Mapping[str, Option]] = {**COMMON, **TEXT_INPUT}

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.normalize = self.spec.normalize
        self._dim: int | None = None

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "prefix": self.spec.prefix,
            "template": self.spec.template,
            "normalize": self.normalize,
        }

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "normalize": self.normalize}

    # -- the TextEncoder protocol ---------------------------------------------------------------
    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """float32 C-contiguous embeddings, shape (len(texts), dim); loads the model first."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, not one string")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if len(texts) == 0:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        texts = list(texts)
        order = self.batch_order(texts)  # loads the model
        got = np.asarray(self._encode_batches([texts[i] for i in order], batch_size), np.float32)
        if got.ndim != 2 or got.shape[0] != len(texts):
            raise ModelError(
                f"{self.name}: got embeddings of shape {got.shape} for {len(texts)} texts"
            )
        out = np.empty_like(got, order="C")
        out[order] = got  # back to the caller's order
        self._dim = out.shape[1]
        return out

    def batch_order(self, texts: Sequence[str]) -> np.ndarray:
        """The order `encode` runs `texts` in: longest first, by the token count the model will
        see where the backend can count tokens (`_token_lengths`), else by characters. Batches
        of near-equal token counts carry little padding, which is most of the work saved over
        a character-sorted order. Ties keep their input order (stable). Loads the model (the
        token counts come from its tokenizer)."""
        self._ensure_loaded()
        lengths = self._token_lengths(list(texts))
        if lengths is None:
            lengths = [len(t) for t in texts]
        return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")

    # -- for subclasses -------------------------------------------------------------------------
    def _encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def _token_lengths(self, texts: list[str]) -> Sequence[int] | None:
        """Each text's token count as the model will see it (after prefix/template and
        truncation), for batching only; None: the backend pads to a fixed width, so sort by
        characters. Called with the model loaded."""
        return None

"""The small protocols every model backend implements.

Metric and engine code only ever sees these: which library produced a vector or a score does
not matter to them. A *fingerprint* is a JSON-able dict describing everything that changes the
model's output (weights and their revision, pooling, prefix/template, max length, normalisation,
dtype); its canonical hash keys the embedding cache. It must be computable without loading the
weights, so that a warm rerun never loads the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class TextEncoder(Protocol):
    """Maps texts to float32 embeddings of shape (len(texts), dim)."""

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray: ...


def fingerprint_key(fingerprint: dict[str, Any]) -> str:
    """Stable hex digest of a fingerprint (canonical JSON, sorted keys)."""
    blob = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@runtime_checkable
class ImageEncoder(Protocol):
    """Maps images to float32 embeddings of shape (n, dim), in the same space as its texts.

    `preprocess` turns one decoded RGB PIL image into the model's input tensor; it runs inside
    DataLoader workers, so it must be picklable and must not touch the GPU. `encode_images`
    takes a stacked batch of preprocessed inputs.
    """

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def preprocess(self, image: Any) -> Any: ...

    def encode_images(self, batch: Any) -> np.ndarray: ...


class ImageRows(list):  # type: ignore[type-arg]
    """A batch of decoded images, one per row, handed to a model as they are: what the engine
    collates when a `preprocess` returns the PIL image itself (a model whose processor takes
    images of any size). Rows that share an image share the same object."""


@runtime_checkable
class PairScorer(Protocol):
    """Scores (image, text) pairs directly (ITM heads, VQAScore): higher = better match.

    `score(images, texts)` returns one float per pair (images[i], texts[i]); images are
    preprocessed inputs as from `preprocess`, stacked, or an `ImageRows` of decoded images.
    """

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def preprocess(self, image: Any) -> Any: ...

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class Answerer(Protocol):
    """Answers a prompt about an image in free form (a generative VLM asked a multiple-choice
    question). `answer(images, prompts)` returns one str per (images[i], prompts[i]); images
    as for a `PairScorer`."""

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def preprocess(self, image: Any) -> Any: ...

    def answer(self, images: Any, prompts: Sequence[str]) -> list[str]: ...


@runtime_checkable
class TextScorer(Protocol):
    """A blind per-text score (perplexity, plausibility, grammar). `lower_is_better` says which
    way it points: perplexity is lower-better, plausibility higher-better."""

    name: str
    lower_is_better: bool

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray: ...

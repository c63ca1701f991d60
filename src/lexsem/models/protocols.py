"""The small protocols every model backend implements.

Metric and engine code only ever sees these: which library produced a vector or a score does
not matter to them. A *fingerprint* is a JSON-able dict describing everything that changes the
model's output (weights and their revision, pooling, prefix/template, max length, normalisation,
dtype); its canonical hash keys the embedding cache. It must be computable without loading the
weights, so that a warm rerun never loads the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from lexsem.credentials import redacted
from lexsem.digests import json_sha256


@runtime_checkable
class TextEncoder(Protocol):
    """Maps texts to float32 embeddings of shape (len(texts), dim)."""

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray: ...


def fingerprint_key(fingerprint: dict[str, Any]) -> str:
    """Stable hex digest of a fingerprint (canonical JSON, sorted keys), without the
    credentials of any URL in it (`lexsem.credentials`: a fingerprint without them keeps its
    key; two that differ only in a credential share one)."""
    return json_sha256(redacted(fingerprint), nan=True)


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
class ChatModel(Protocol):
    """Answers conversations about images in free form (`lexsem.models.chat.ChatRequest`): an
    API (`openai:`, a user's provider), a local generative VLM (`vlm:`) or recorded answers
    (`recorded:`). The engine (`lexsem.engine.chat`) stores every answer under the key of its
    request body, so a rerun asks nothing again.

    - `request_body(request, image_part=None)`: the JSON-able body of `request`, each image
      rendered by `image_part` (the engine's store key renders it as its content key; None: as
      the model sends it);
    - `send(client, body)`: one request, `(answer text, raw response JSON)`; `client` is an
      `httpx.Client` the engine opens for the run. Raise `lexsem.errors.RetryableError` for
      what a retry may fix, `lexsem.models.chat.StopRun` for what every request would repeat.

    Optional: `concurrency` (the most requests it takes at a time; 1 when absent),
    `expect(requests)` (called once with every request of a run before any is sent), and
    `send_batch(client, bodies)` with `batch_size` (a local model that generates several
    requests in one batch, `chat:`: a list of `(answer text, raw response JSON)`, one per body,
    in order; the engine then sends `batch_size` bodies per call, one call at a time).
    """

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def request_body(self, request: Any, image_part: Any = None) -> dict[str, Any]: ...

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]: ...


@runtime_checkable
class LogprobChatModel(ChatModel, Protocol):
    """A chat model whose responses carry log-probabilities: it scores (image, text) pairs by
    VQAScore (`lexsem.models.vqascore`; `vqascore` holds its settings).

    - `logprob_requests(image, question, answers)`: the requests that give P(answer) for each
      of `answers` to `question` about `image` (bytes);
    - `answer_probs(responses, answers)`: `{answer: AnswerProb}` from their raw responses.
    """

    vqascore: Any

    def logprob_requests(
        self, image: bytes | None, question: str, answers: Sequence[str]
    ) -> Any: ...

    def answer_probs(self, responses: Sequence[dict[str, Any]], answers: Sequence[str]) -> Any: ...


@runtime_checkable
class TextScorer(Protocol):
    """A blind per-text score (perplexity, plausibility, grammar). `lower_is_better` says which
    way it points: perplexity is lower-better, plausibility higher-better."""

    name: str
    lower_is_better: bool

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray: ...


@runtime_checkable
class VotesModel(Protocol):
    """People's votes by item (`lexsem.models.item_votes`; a human study's run): the tasks it
    answered of a loaded benchmark (`tasks_for`), and the value of each `votes` column of each
    item it voted on (`votes_for`, keyed by benchmark, task, column, subset and item id), read
    by the people's reading of the tasks (`lexsem.tasks.voted`)."""

    name: str

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def tasks_for(self, benchmark: Any) -> list[str]: ...

    def votes_for(self, works: Sequence[Any]) -> dict[tuple[str, str, str, str, str], float]: ...


MODEL_PROTOCOLS: tuple[type, ...] = (TextEncoder, ImageEncoder, PairScorer, TextScorer, ChatModel)


def protocol_members(protocol: type) -> list[str]:
    """The attributes and methods a model of `protocol` must have (its own and inherited)."""
    names: list[str] = []
    for cls in reversed(protocol.__mro__):
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        names += list(getattr(cls, "__annotations__", {}))
        names += [n for n in vars(cls) if not n.startswith("_")]
    return list(dict.fromkeys(names))


def missing_members(model: object) -> dict[str, list[str]]:
    """Protocol name → the members `model` lacks, for each model protocol (`MODEL_PROTOCOLS`)."""
    return {
        p.__name__: [m for m in protocol_members(p) if not hasattr(model, m)]
        for p in MODEL_PROTOCOLS
    }


def describe_missing(model: object) -> str:
    """Why `model` is no model lexsem can run: what each protocol needs that it lacks,
    closest protocol first."""
    lacking = sorted(missing_members(model).items(), key=lambda kv: len(kv[1]))
    parts = [f"{name} needs {', '.join(members)}" for name, members in lacking if members]
    return (
        f"{type(model).__name__} implements none of the model protocols "
        f"(lexsem.models.protocols): {'; '.join(parts)}"
    )


def batch_size_refusal(model: object, method: str) -> str | None:
    """Why `model.method` (`encode`, `score_texts`) cannot be called as the engine calls it
    (`method(texts, batch_size=N)`), or None when it can."""
    import inspect

    fn = getattr(model, method, None)
    if not callable(fn):
        return None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: assume it conforms
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params) or any(
        p.name == "batch_size" and p.kind is not p.POSITIONAL_ONLY for p in params
    ):
        return None
    signature = inspect.signature(fn)
    return (
        f"{type(model).__name__}.{method}{signature} takes no batch_size keyword; lexsem calls "
        f"{method}(texts, batch_size=N) (the protocol: def {method}(self, texts, *, "
        f"batch_size: int = 64) -> np.ndarray); add the parameter (it may ignore it)"
    )

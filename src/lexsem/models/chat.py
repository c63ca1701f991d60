"""What a chat model is asked and answers: conversations (`ChatRequest` of `Turn`s), the
OpenAI-format messages every chat backend renders (`chat_messages`), the probability of an
answer read from log-probabilities (`AnswerProb`), and `StopRun`.

A request is a conversation — user turns with any number of images (shown before the text),
assistant turns as text: k-shot demonstrations are earlier user/assistant turns before the
question — plus extra body fields (`params`: `max_tokens`, `logprobs`, ...) that replace or add
to the model's own. `about` says what the request is about (benchmark, subset, item id, task,
column): it is never part of a request body nor of its store key; a model that answers by item
(`recorded:`) reads it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lexsem.errors import ModelError

__all__ = [
    "AnswerProb",
    "ChatRequest",
    "StopRun",
    "Turn",
    "chat_messages",
    "data_url_part",
]


class StopRun(ModelError):
    """An error every other request of the run would repeat (the server returns no
    log-probabilities): the engine sends nothing more."""


@dataclass(frozen=True)
class Turn:
    """One message: `role` (`user` or `assistant`), its text and (user turns) its images,
    shown before the text."""

    role: str
    text: str
    images: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    """A conversation to send, extra body fields (`params`) and what it is about (`about`:
    benchmark, subset, item, task, column; never sent, never in a store key)."""

    turns: tuple[Turn, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    about: Mapping[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def ask(
        cls, prompt: str, image: bytes | None, about: Mapping[str, str] | None = None
    ) -> ChatRequest:
        """One user turn: the image (if any), then the prompt."""
        turn = Turn("user", prompt, (image,) if image is not None else ())
        return cls((turn,), about=dict(about or {}))


@dataclass(frozen=True)
class AnswerProb:
    """P(answer) read from a response: `tokens` / `logprobs` are the top-k variants summed
    (`top`) or the answer's own tokens (`prompt`); `below_top_k`: no variant was among the k
    returned (`prob` is then 0)."""

    answer: str
    prob: float
    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    below_top_k: bool = False
    mode: str = "top"


def chat_messages(
    request: ChatRequest, part: Callable[[bytes], dict[str, Any]], name: str
) -> list[dict[str, Any]]:
    """The OpenAI `messages` of `request`: user turns as content parts (images first, rendered
    by `part`, then the text), assistant turns as text."""
    messages = []
    for turn in request.turns:
        if turn.role == "user":
            content: Any = [part(img) for img in turn.images]
            content.append({"type": "text", "text": turn.text})
        elif turn.images:
            raise ModelError(f"{name}: only user turns carry images")
        else:
            content = turn.text
        messages.append({"role": turn.role, "content": content})
    return messages


def _image_mime(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:3] == b"GIF":
        return "image/gif"
    return "image/jpeg"


def data_url_part(image: bytes) -> dict[str, Any]:
    """An image as a chat content part: a base64 data URL."""
    url = f"data:{_image_mime(image)};base64,{base64.b64encode(image).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}

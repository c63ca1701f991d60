"""A local generative VLM (`vlm:`) behind the chat interface of `lexsem ask`, so that everything
`ask` does for an API model works for a local one: multi-turn conversations with several
images (k-shot demonstrations, SugarCrepe++ Table 14), the request store (a rerun generates
nothing again; `--replay-only`, `--import`), `--max-requests` and `--run`.

A request body is the OpenAI-format body an API would get (the images as their content keys
in the store key; as their bytes, not data URLs, when sent); `send` decodes the images, renders the
conversation with the model's chat template (each user turn: its images, then its text;
assistant turns as text) and answers with greedy decoding (`VLMAnswerer`'s `max_new_tokens`).
Log-probability requests (`ask --vqascore`) are refused: the local VQAScore is `vqa:`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from lexsem.errors import ModelError
from lexsem.models.backends.openai_chat import ChatRequest, chat_messages

__all__ = ["LocalChat"]


def _bytes_part(image: bytes) -> dict[str, Any]:
    """An image as it is sent to a local model: its bytes (no base64 round trip)."""
    return {"type": "image_bytes", "bytes": image}


def _image(part: dict[str, Any]) -> Any:
    from lexsem.images.decode import decode_image

    return decode_image(part["bytes"])


class LocalChat:
    """A `vlm:` answerer as a chat model of `lexsem ask` (see the module doc)."""

    backend: ClassVar[str] = "vlm"
    logprobs_mode = "none"

    def __init__(self, answerer: Any) -> None:
        self.answerer = answerer
        self.name = answerer.name
        self.model = answerer.spec.name

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {**self.answerer.fingerprint, "interface": "chat"}

    def request_body(self, request: ChatRequest, image_part: Any = None) -> dict[str, Any]:
        if request.params:
            raise ModelError(
                f"{self.name}: a local model answers free-form questions only; for VQAScore use "
                f"vqa:{self.model} with lexsem eval"
            )
        messages = chat_messages(request, image_part or _bytes_part, self.name)
        return {"model": self.model, "messages": messages,
                "max_new_tokens": self.answerer.max_new_tokens}  # fmt: skip

    def logprob_requests(self, *args: Any, **kwargs: Any) -> Any:
        raise ModelError(
            f"{self.name}: ask --vqascore reads an API's log-probabilities; the local VQAScore "
            f"is lexsem eval -m vqa:{self.model}"
        )

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Answer one conversation locally: (the answer, a record of what made it)."""
        images, turns = [], []
        for msg in body["messages"]:
            parts = (
                msg["content"]
                if isinstance(msg["content"], list)
                else [{"type": "text", "text": msg["content"]}]
            )
            content = []
            for p in parts:
                if p["type"] == "image_bytes":
                    images.append(_image(p))
                    content.append({"type": "image"})
                else:
                    content.append({"type": "text", "text": p["text"]})
            turns.append({"role": msg["role"], "content": content})
        text = self.answerer.converse(turns, images)
        return text, {"local": self.model, "images": len(images), "turns": len(turns)}

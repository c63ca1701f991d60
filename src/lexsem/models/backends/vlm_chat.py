"""`vlm:` backend: a local generative VLM (transformers `AutoModelForImageTextToText`) answering
conversations about images in free form — a `ChatModel` (`lexsem.models.protocols`), asked the
multiple-choice tasks (`lexsem.tasks.choice_task`; `lexsem eval -m vlm:MODEL -b
sugarcrepe_pp`, `lexsem ask -m vlm:MODEL`) through the engine's request store like an API.

Spec: `vlm:NAME?max_new_tokens=32&format=...`. A request body is the OpenAI-format body an API
would get (the images as their content keys in the store key; as their bytes, not data URLs,
when sent, and how to decode them: the benchmark's decode profile, RGB first, as every local
image model gets them). `send` decodes the images so and answers with greedy
decoding (no sampling: a rerun gives the same text), at most `max_new_tokens` tokens, special
tokens removed, stripped: a one-turn question is the user turn (the image, then the prompt) of
the model's chat template, or `format` (with `{text}`) where it has none; a conversation of
several turns (k-shot demonstrations, SugarCrepe++ Table 14) is rendered by the chat template
(each user turn: its images, then its text; assistant turns as text). Log-probability requests
are refused: the local VQAScore is `vqa:`. `max_new_tokens` and `format` are in the
fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from lexsem.errors import ModelError
from lexsem.models.chat import ChatRequest, chat_messages
from lexsem.models.options import Option, positive_int
from lexsem.models.vlm.generative import VLM_OPTIONS, GenerativeVLM

__all__ = ["VLMAnswerer"]


def _bytes_part(image: bytes) -> dict[str, Any]:
    """An image as it is sent to a local model: its bytes (no base64 round trip)."""
    return {"type": "image_bytes", "bytes": image}


def decode_profile(about: Mapping[str, str]) -> Any:
    """How a request's images are decoded: the benchmark's profile named in `about` (and the
    run's EXIF choice), RGB first (the processor takes RGB images), as every other image model
    of lexsem gets them; `default` where `about` names none."""
    from lexsem.images.decode import get_profile

    profile = get_profile(about.get("decode") or "default")
    exif = about.get("exif_transpose")
    if exif is not None:
        profile = profile.with_exif(exif == "true")
    return profile.for_model(False)


class VLMAnswerer(GenerativeVLM):
    """A lazy `ChatModel`: greedy free-form answers of a transformers generative VLM."""

    backend: ClassVar[str] = "vlm"
    description = "a generative VLM answering prompts about images (transformers): chat"
    options: ClassVar[Mapping[str, Option]] = {**VLM_OPTIONS, "max_new_tokens": positive_int(32)}
    concurrency = 1  # one conversation at a time

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.max_new_tokens = int(self.spec.get("max_new_tokens") or 32)

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            **self._vlm_fingerprint(),
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
        }

    def request_body(self, request: ChatRequest, image_part: Any = None) -> dict[str, Any]:
        if request.params:
            raise ModelError(
                f"{self.name}: a local model answers free-form questions only; its VQAScore is "
                f"vqa:{self.spec.name}"
            )
        messages = chat_messages(request, image_part or _bytes_part, self.name)
        return {"model": self.spec.name, "messages": messages,
                "max_new_tokens": self.max_new_tokens,
                "decode": decode_profile(request.about).describe()}  # fmt: skip

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Answer one conversation locally: (the answer, a record of what made it)."""
        from lexsem.images.decode import DecodeProfile, decode

        profile = DecodeProfile(**body["decode"])
        images, turns = [], []
        for msg in body["messages"]:
            parts = msg["content"]
            if not isinstance(parts, list):
                parts = [{"type": "text", "text": parts}]
            content = []
            for p in parts:
                if p["type"] == "image_bytes":
                    images.append(decode(p["bytes"], profile))
                    content.append({"type": "image"})
                else:
                    content.append({"type": "text", "text": p["text"]})
            turns.append({"role": msg["role"], "content": content})
        if len(turns) == 1 and len(images) == 1:  # one question: the model's own user turn
            text = self.generate(images[0], self.user_turn(turns[0]["content"][-1]["text"]),
                                 max_new_tokens=self.max_new_tokens)  # fmt: skip
        else:
            text = self.converse(turns, images)
        return text, {"local": self.spec.name, "images": len(images), "turns": len(turns)}

    def converse(self, turns: list[dict[str, Any]], images: list[Any]) -> str:
        """The greedy answer to a conversation (chat-template messages whose image parts are
        `images`, in order): several turns and images (k-shot demonstrations)."""
        return self.generate(images, self.conversation(turns), max_new_tokens=self.max_new_tokens)

"""`vlm:` backend: a local generative VLM (transformers `AutoModelForImageTextToText`) answering
prompts about images in free form — the `Answerer` of the multiple-choice tasks
(`lexsem.tasks.choice_task`; `lexsem eval -m vlm:MODEL -b sugarcrepe_pp`).

Spec: `vlm:NAME?max_new_tokens=32&format=...`. Each prompt is the user turn (the image, then
the prompt) of the model's chat template, or `format` (with `{text}`) where it has none; the
answer is greedy decoding (no sampling: a rerun gives the same text), at most
`max_new_tokens` tokens, special tokens removed, stripped. The answers go to the request store
like scores, so a rerun asks nothing again. `max_new_tokens` and `format` are in the
fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from lexsem.errors import ModelError
from lexsem.models.options import Option, positive_int
from lexsem.models.vlm.generative import VLM_OPTIONS, GenerativeVLM

__all__ = ["VLMAnswerer"]


class VLMAnswerer(GenerativeVLM):
    """A lazy `Answerer`: greedy free-form answers of a transformers generative VLM."""

    backend: ClassVar[str] = "vlm"
    description = "a generative VLM answering prompts about images (transformers): answerer"
    options: ClassVar[Mapping[str, Option]] = {**VLM_OPTIONS, "max_new_tokens": positive_int(32)}

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.max_new_tokens = int(self.spec.get("max_new_tokens") or 32)

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            **self._vlm_fingerprint(),
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
        }

    def answer(self, images: Any, prompts: Sequence[str]) -> list[str]:
        prompts = list(prompts)
        if len(prompts) != len(images):
            raise ModelError(f"{self.name}: {len(images)} images for {len(prompts)} prompts")
        return [
            self.generate(image, self.user_turn(p), max_new_tokens=self.max_new_tokens)
            for image, p in zip(images, prompts, strict=True)
        ]

    def converse(self, turns: list[dict[str, Any]], images: list[Any]) -> str:
        """The greedy answer to a conversation (chat-template messages whose image parts are
        `images`, in order): several turns and images (k-shot demonstrations)."""
        return self.generate(images, self.conversation(turns), max_new_tokens=self.max_new_tokens)

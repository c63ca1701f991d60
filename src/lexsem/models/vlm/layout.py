"""How a generative VLM family takes a prompt, an image and a continuation.

Three kinds, read from the loaded model's config (never from a benchmark):

- ``causal`` (LLaVA-1.5 / NeXT / OneVision, Qwen2/2.5/3-VL, Idefics3, SmolVLM, Gemma 3, BLIP-2
  and InstructBLIP with a decoder-only LM): prompt and continuation are one sequence, encoded
  together by the processor;
- ``prefix_lm`` (PaliGemma): the prompt is a bidirectional prefix and the continuation a causal
  suffix, told apart by ``token_type_ids``; the processor's ``suffix=`` argument makes them (a
  continuation put inside the prompt would see its own future);
- ``seq2seq`` (BLIP-2 / InstructBLIP with Flan-T5): the prompt goes to the encoder, the
  continuation's tokens are the decoder's labels.

The user turn is the processor's chat template (the image, then the text, up to where the
assistant's reply starts) when it has one; otherwise a plain format: PaliGemma's
``answer en {text}`` or BLIP-2's ``Question: {text} Answer:`` (the processor places the image
itself). A continuation follows the prompt after one space unless the prompt ends in
whitespace (``ASSISTANT:`` + `` Yes``; Qwen's ``assistant\\n`` + ``Yes``); in the prefix-LM and
encoder-decoder kinds the continuation is a separate sequence and gets no space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["causal", "prefix_lm", "seq2seq"]
PLAIN_FORMATS = {"paligemma": "answer en {text}"}
# processors that count images per row and want one list per row (`[[image], [image]]`)
NESTED_IMAGES = frozenset({"idefics2", "idefics3", "smolvlm", "gemma3"})
DEFAULT_PLAIN = "Question: {text} Answer:"

__all__ = ["Layout", "layout_of"]


@dataclass(frozen=True)
class Layout:
    """One model's layout: its kind, its user-turn format (``None``: the chat template), and
    the token ids that stand for an image in its sequences (empty when unknown)."""

    kind: Kind
    model_type: str
    plain_format: str | None
    image_token_ids: frozenset[int]

    def images(self, image: Any, n: int) -> list[Any]:
        """The processor's `images` argument for `n` rows that each show `image`."""
        return [[image]] * n if self.model_type in NESTED_IMAGES else [image] * n

    def separator(self, prompt: str) -> str:
        """What goes between `prompt` and a continuation."""
        if self.kind != "causal" or not prompt or prompt[-1].isspace():
            return ""
        return " "


def _kind(config: Any) -> Kind:
    if getattr(config, "model_type", "") == "paligemma":
        return "prefix_lm"
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq"
    if getattr(config, "use_decoder_only_language_model", True) is False:
        return "seq2seq"
    text = getattr(config, "text_config", None)
    if text is not None and getattr(text, "is_encoder_decoder", False):
        return "seq2seq"
    return "causal"


def _image_tokens(config: Any) -> frozenset[int]:
    names = ("image_token_id", "image_token_index")
    return frozenset(
        int(v) for n in names if isinstance(v := getattr(config, n, None), int) and v >= 0
    )


def layout_of(config: Any, processor: Any, plain_format: str | None = None) -> Layout:
    """The layout of a loaded model (`config`) with its `processor`; `plain_format` (with
    ``{text}``) replaces the chat template."""
    model_type = str(getattr(config, "model_type", ""))
    if plain_format is None and not getattr(processor, "chat_template", None):
        plain_format = PLAIN_FORMATS.get(model_type, DEFAULT_PLAIN)
    return Layout(_kind(config), model_type, plain_format, _image_tokens(config))


def user_turn(layout: Layout, processor: Any, text: str) -> str:
    """The prompt of one user turn: the image, then `text`, up to where the reply starts."""
    if layout.plain_format is not None:
        return layout.plain_format.replace("{text}", text)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    return str(processor.apply_chat_template(messages, add_generation_prompt=True))

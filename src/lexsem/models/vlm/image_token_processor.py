"""The processor of the VLM checkpoints in the LLaVA code base's own format (CLIP-FlanT5,
ShareGPT4V): what transformers' processors do for the families they know, done as that code
base does it.

- **Tokens** ("Improved Baselines with Visual Instruction Tuning" (LLaVA-1.5) code, as used by
  "Evaluating Text-to-Visual Generation with Image-to-Text Generation" (VQAScore), §3): a
  prompt is split at each ``<image>``, every piece is tokenized on its own with the
  tokenizer's special tokens, and the pieces are joined by an image placeholder. A tokenizer
  that begins a text with a begin-of-text token (LLaMA) keeps the first piece's and drops the
  later pieces' (``tokenizer_image_token``); one that ends a text with ``</s>`` (T5) keeps
  every piece's (``t5_tokenizer_image_token``: the encoder reads
  ``… USER: </s> <image> \\n … </s>``).
  `ImageTokenTokenizer` gives these ids with one placeholder per image (what lexsem's
  prompt-sharing code compares); the processor repeats the placeholder once per image feature.
  A text without ``<image>`` gets the image first (the code base's ``plain`` layout); a text
  may show several images, one ``<image>`` each (a conversation with several turns).
- **Images**: padded to a square filled with the image processor's mean colour, the image
  centred (``expand2square``), then the vision tower's CLIP image processor (resize, crop,
  normalise).
- **Conversation**: `Conversation` renders chat messages the way the code base's conversation
  templates do (system message, ``USER:`` / ``ASSISTANT:`` roles, the image token and a newline
  before the first text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lexsem.errors import ModelError

__all__ = [
    "VICUNA_V1_SYSTEM",
    "Conversation",
    "ImageTokenProcessor",
    "ImageTokenTokenizer",
    "expand2square",
]

IMAGE = "<image>"
# the system message of the code base's `conv_vicuna_v1` conversation template
VICUNA_V1_SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)


def expand2square(image: Any, fill: tuple[int, ...]) -> Any:
    """`image` (PIL) centred on a square of its longer side, filled with `fill` (RGB 0..255)."""
    from PIL import Image

    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    out = Image.new(image.mode, (side, side), fill)
    out.paste(image, ((side - width) // 2, (side - height) // 2))
    return out


@dataclass(frozen=True)
class Conversation:
    """A conversation template of the LLaVA code base: ``{system} USER: <image>\\n{text}
    ASSISTANT:`` with `user_end` after a user turn and `assistant_end` after a reply;
    `generation` is what a rendered prompt ends with (where the reply starts)."""

    system: str
    roles: tuple[str, str] = ("USER", "ASSISTANT")
    user_end: str = " "
    assistant_end: str = "</s>"
    generation: str = "ASSISTANT:"

    def render(self, messages: Sequence[dict[str, Any]], add_generation_prompt: bool) -> str:
        out = self.system + " " if self.system else ""
        for m in messages:
            role = m.get("role")
            if role == "system":
                raise ModelError("this model's conversation has a fixed system message")
            if role not in ("user", "assistant"):
                raise ModelError(f"a conversation turn has the role {role!r}")
            content = m.get("content")
            parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
            images = sum(1 for p in parts if p.get("type") == "image")
            text = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
            body = (IMAGE + "\n") * images + text
            if role == "user":
                out += f"{self.roles[0]}: {body}{self.user_end}"
            else:
                out += f"{self.roles[1]}: {body}{self.assistant_end}"
        if add_generation_prompt:
            out += self.generation
        return out


class ImageTokenTokenizer:
    """A tokenizer whose ids put one `placeholder` at each ``<image>`` (see the module doc);
    everything else is the wrapped tokenizer's."""

    def __init__(self, tokenizer: Any, placeholder: int) -> None:
        self.__dict__["tokenizer"] = tokenizer
        self.__dict__["placeholder"] = placeholder

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["tokenizer"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["tokenizer"], name, value)

    def encode_text(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The ids of one text (see the module doc): its pieces around ``<image>`` tokenized
        on their own and joined by the placeholder, a begin-of-text token the pieces start
        with kept once."""
        tok = self.tokenizer
        chunks = [
            list(tok(c, add_special_tokens=add_special_tokens)["input_ids"])
            for c in text.split(IMAGE)
        ]
        bos = tok.bos_token_id
        keep = 1 if chunks[0] and bos is not None and chunks[0][0] == bos else 0
        out = chunks[0][:keep]
        for i, c in enumerate(chunks):
            if i:
                out.append(self.placeholder)
            out += c[keep:]
        return out

    def __call__(
        self, text: str | list[str], add_special_tokens: bool = True, **_: Any
    ) -> dict[str, Any]:
        if isinstance(text, str):
            return {"input_ids": self.encode_text(text, add_special_tokens)}
        return {"input_ids": [self.encode_text(t, add_special_tokens) for t in text]}


class ImageTokenProcessor:
    """A transformers-like processor: `__call__(text=, images=, return_tensors="pt",
    padding=True)` gives right-padded ``input_ids`` (each image placeholder repeated
    `image_tokens` times), ``attention_mask`` and ``pixel_values`` (every row's images in
    order); `apply_chat_template` renders a `Conversation`."""

    def __init__(
        self,
        tokenizer: ImageTokenTokenizer,
        image_processor: Any,
        image_tokens: int,
        conversation: Conversation,
    ) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.image_tokens = image_tokens
        self.conversation = conversation
        # the conversation is this processor's chat template (`lexsem.models.vlm.layout`)
        self.chat_template = conversation

    def apply_chat_template(
        self, messages: Sequence[dict[str, Any]], add_generation_prompt: bool = False, **_: Any
    ) -> str:
        return self.conversation.render(messages, add_generation_prompt)

    def pixel_values(self, images: Sequence[Any]) -> Any:
        """The vision tower's input for each image, padded to a square first."""
        mean = self.image_processor.image_mean
        fill = tuple(int(x * 255) for x in mean)
        squares = [expand2square(im.convert("RGB"), fill) for im in images]
        return self.image_processor(images=squares, return_tensors="pt")["pixel_values"]

    def __call__(
        self,
        text: str | list[str],
        images: Any = None,
        *,
        return_tensors: str = "pt",
        padding: bool | str = True,
        add_special_tokens: bool = True,
        **_: Any,
    ) -> dict[str, Any]:
        import torch

        texts = [text] if isinstance(text, str) else list(text)
        per_row = _per_row(images, len(texts))
        tok, rows = self.tokenizer, []
        for t, row_images in zip(texts, per_row, strict=True):
            if row_images and IMAGE not in t:
                t = IMAGE + t
            ids = tok.encode_text(t, add_special_tokens)
            if ids.count(tok.placeholder) != len(row_images):
                raise ModelError(
                    f"a prompt with {ids.count(tok.placeholder)} {IMAGE} comes with "
                    f"{len(row_images)} images: {t[-80:]!r}"
                )
            wide: list[int] = []
            for i in ids:
                wide += [i] * self.image_tokens if i == tok.placeholder else [i]
            rows.append(wide)
        width = max(len(r) for r in rows)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.as_tensor(r)
            mask[i, : len(r)] = 1
        out: dict[str, Any] = {"input_ids": input_ids, "attention_mask": mask}
        flat = [im for row in per_row for im in row]
        if flat:
            out["pixel_values"] = self.pixel_values(flat)
        return out


def _per_row(images: Any, n: int) -> list[list[Any]]:
    """Each text's images: `images` holds one image per text, or one list per text (a
    conversation with several images, in the order of its ``<image>`` tokens)."""
    if images is None:
        return [[] for _ in range(n)]
    given = list(images) if isinstance(images, (list, tuple)) else [images]
    if len(given) != n:
        raise ModelError(f"{len(given)} images (or image lists) for {n} texts")
    return [list(im) if isinstance(im, (list, tuple)) else [im] for im in given]

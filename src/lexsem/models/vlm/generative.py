"""`GenerativeVLM`: the lazy base of the generative-VLM backends (`vqa:`, `vgpt:`, `vlm:`).

It loads the model and its processor from the model's folder (a transformers
``AutoModelForImageTextToText`` with its ``AutoProcessor``, or a checkpoint in the LLaVA code
base's own format: `lexsem.models.vlm.loading`), finds the family's layout
(`lexsem.models.vlm.layout`), and gives the backends three primitives: `logprobs`
(teacher-forced log-probabilities of continuations after prompts, with one image;
`lexsem.models.vlm.teacher`), `first_token_logprobs` (the first reply token's probability as
greedy generation scores it; `lexsem.models.vlm.next_token`) and `generate` (a greedy free-form
answer).

Images reach it whole: `preprocess` hands the decoded RGB image through, and the processor
makes the model's inputs from it, so dynamic-resolution families (Qwen-VL, LLaVA-NeXT /
OneVision tiling, Idefics3 / SmolVLM splitting) see every image at its own size. Options:
``format`` (a user-turn format with ``{text}`` instead of the chat template) and ``reuse``
(compute an image's shared prompt start once for all its candidates; on by default, and it
gives the same numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.lazy import LazyModel
from lexsem.models.options import COMMON, Option, flag, parse_template
from lexsem.models.vlm.layout import Layout, layout_of, user_turn
from lexsem.models.vlm.loading import companions, load_vlm
from lexsem.models.vlm.next_token import first_token_logprobs
from lexsem.models.vlm.sequences import (
    InputTransform,
    continuation_ids,
    model_inputs,
    special_tokens,
)
from lexsem.models.vlm.teacher import continuation_logprobs

__all__ = ["GenerativeVLM", "VLMPairScorer", "group_rows", "passthrough"]

VLM_OPTIONS: dict[str, Option] = {
    **COMMON,
    "format": Option(parse_template),
    "reuse": flag(True),
}


def passthrough(image: Any) -> Any:
    """The decoded RGB image itself: the model's processor makes the inputs."""
    return image


def group_rows(images: Sequence[Any]) -> list[tuple[Any, list[int]]]:
    """Rows grouped by image (the same decoded object: one image paired with several texts),
    in first-seen order."""
    groups: dict[int, tuple[Any, list[int]]] = {}
    for i, image in enumerate(images):
        groups.setdefault(id(image), (image, []))[1].append(i)
    return list(groups.values())


class GenerativeVLM(LazyModel):
    """Shared loading, layout and primitives of the generative-VLM backends."""

    options: ClassVar[dict[str, Option]] = VLM_OPTIONS
    _not_pickled = ("_model", "_processor", "_layout")

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.user_format: str | None = self.spec.get("format")
        reuse = self.spec.get("reuse")
        self.reuse = True if reuse is None else bool(reuse)
        self._processor: Any = None
        self._layout: Layout | None = None

    def _vlm_fingerprint(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": self.user_format}  # `reuse` changes no number
        parts = companions(self.source.path, self._offline)
        if parts:  # a vision tower or tokenizer of its own hub id or folder
            out["companions"] = parts
        return out

    @property
    def preprocess(self) -> Any:
        return passthrough

    # -- primitives -------------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        self._ensure_loaded()
        assert self._layout is not None
        return self._layout

    def user_turn(self, text: str) -> str:
        """The prompt of a user turn of the image and `text`, up to where the reply starts."""
        return user_turn(self.layout, self._processor, text)

    def logprobs(
        self,
        image: Any,
        rows: Sequence[tuple[str, str]],
        *,
        transform: InputTransform | None = None,
    ) -> list[Any]:
        """Per (prompt, continuation) row, the continuation's per-token log-probabilities after
        the prompt with `image` (float64 arrays); `transform` changes the processor's outputs
        (the image's `pixel_values`) before the model sees them."""
        model = self._ensure_loaded()
        try:
            return continuation_logprobs(
                model, self._processor, self.layout, image, rows, reuse=self.reuse,
                device=self.device, transform=transform,
            )  # fmt: skip
        except ModelError as exc:
            raise ModelError(f"{self.name}: {exc}") from exc

    def first_token_logprobs(
        self, image: Any, prompts: Sequence[str], token_ids: Sequence[int]
    ) -> np.ndarray:
        """Per prompt, log P(the first reply token is `token_ids[i]`) with `image`, as greedy
        generation scores it (`lexsem.models.vlm.next_token`)."""
        model = self._ensure_loaded()
        return first_token_logprobs(
            model, self._processor, self.layout, image, prompts, token_ids, device=self.device
        )

    def conversation(self, turns: list[dict[str, Any]]) -> str:
        """A rendered conversation (chat-template messages), up to where the reply starts."""
        self._ensure_loaded()
        if self.layout.plain_format is not None:
            raise ModelError(
                f"{self.name}: a conversation of several turns needs a chat template; the "
                "processor has none"
            )
        return str(self._processor.apply_chat_template(turns, add_generation_prompt=True))

    def continuation_ids(self, prompt: str, continuation: str) -> tuple[int, ...]:
        """The token ids `continuation` has after `prompt` (as `logprobs` places it)."""
        layout = self.layout
        full = prompt + layout.separator(prompt) + continuation
        tok = self._processor.tokenizer
        if layout.kind != "causal":
            return tuple(tok(continuation, add_special_tokens=False)["input_ids"])
        return tuple(continuation_ids(tok, prompt, full))

    def generate(self, image: Any, prompt: str, *, max_new_tokens: int = 32) -> str:
        """The model's greedy answer to `prompt` (a rendered conversation) about `image` (one
        image, or a list: the images of the conversation in order)."""
        import torch

        model = self._ensure_loaded()
        kw = special_tokens(self._processor.tokenizer, prompt)
        given = image if isinstance(image, list) else [image]
        images = [given] if len(given) > 1 else given  # one row: several images nest
        enc = self._processor(text=[prompt], images=images, return_tensors="pt", **kw)
        inputs = model_inputs(enc, model, self.device)
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        if self.layout.kind != "seq2seq":
            out = out[:, inputs["input_ids"].shape[1] :]
        return str(self._processor.tokenizer.decode(out[0], skip_special_tokens=True)).strip()

    # -- loading ----------------------------------------------------------------------------------
    def _load(self) -> Any:
        path = self.source.path
        try:
            model, processor = load_vlm(path, torch_dtype(self.dtype), self._offline)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise self._load_error(exc) from exc
        tok = getattr(processor, "tokenizer", None)
        if tok is None or tok.pad_token is None:
            raise ModelError(f"{self.name}: the processor's tokenizer has no pad token")
        tok.padding_side = "right"
        self._processor = processor
        self._layout = layout_of(model.config, processor, self.user_format)
        model.to(self.device)
        model.eval()
        return model


class VLMPairScorer(GenerativeVLM):
    """A `PairScorer` over a generative VLM: `score` groups the rows by image and asks
    `_scores(image, texts)` (float64, one per text) of each group."""

    def _scores(self, image: Any, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if len(texts) != len(images):
            raise ModelError(f"{self.name}: {len(images)} images for {len(texts)} texts")
        out = np.zeros(len(texts), dtype=np.float64)
        for image, rows in group_rows(images):
            out[rows] = self._scores(image, [texts[i] for i in rows])
        return out.astype(np.float32)

"""`vqa:` backend: VQAScore of a generative VLM (transformers `AutoModelForImageTextToText` with
its processor and chat template), as a pair scorer: how likely the model answers "Yes" to
`Does this figure show "{text}"? Please answer yes or no.` about the image.

Spec: `vqa:NAME?score=vqa|vqa_norm|vqa_diff&question=...&answer=Yes&negative=No`; `question`
is a template with `{text}` or a preset: `t17_1` ... `t17_5`, the five prompt paraphrases of
SugarCrepe++ Table 17 (prompt sensitivity), verbatim.

- `vqa` (default): the VQAScore reference's score, exp(mean log-probability) of the answer's
  tokens, teacher-forced after the question in the model's chat template (the answer is the
  assistant's reply, placed where `add_generation_prompt` ends, after one space);
- `vqa_norm`: P(answer) / (P(answer) + P(negative)) with the same probabilities;
- `vqa_diff`: P(answer) - P(negative).

The primitive (`answer_logprobs`) is the per-token log-probability of a continuation after a
prompt and an image: prompt and continuation are encoded together (so the boundary is tokenized
as the model sees it) and the continuation's tokens are those after the prompt's own encoding,
which must be a prefix of the whole (else a `ModelError`: the score would be of other tokens).
Every input the processor makes (`token_type_ids`, `mm_token_type_ids`, `image_sizes`, ...)
is passed to the model, so models that read them (PaliGemma, Gemma 3, Qwen-VL) get them.

Images: `preprocess` is the model's image processor (fixed-resolution families: LLaVA-1.5,
PaliGemma, BLIP-2, InstructBLIP, Idefics-style processors that resize to one size); the text
side is made by the processor with a stand-in image of the same size (the number of image
tokens depends only on it), and the real pixels replace the stand-in's. Dynamic-resolution
families (Qwen2-VL, LLaVA-NeXT) need their images at full size and are not supported yet.

The question, the answer strings and the score are in the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.base import LazyModel
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, Option, choice

__all__ = ["VQAScorer"]

QUESTION = 'Does this figure show "{text}"? Please answer yes or no.'
SCORES = ("vqa", "vqa_norm", "vqa_diff")
# the five prompt paraphrases of SugarCrepe++ Table 17 (prompt sensitivity), verbatim with
# `<caption>` as `{text}`; use them as `question=t17_1` ... `question=t17_5` (with
# `answer=yes&negative=no`, the words they ask for)
QUESTIONS = {
    "t17_1": "Does the following caption match the image: {text}? Provide 'yes' or 'no' as "
    "response",
    "t17_2": "Does the caption match the image: {text}? Provide 'yes' or 'no' as response",
    "t17_3": "Do the image and the following caption match: {text}? Provide 'yes' or 'no' as "
    "response",
    "t17_4": "Does the caption correctly describe the image: {text}? Provide 'yes' or 'no' as "
    "response",
    "t17_5": "Is the caption an accurate description of the image: {text}? Provide 'yes' or 'no' "
    "as response.",
}


def _question(text: str) -> str:
    """A question template with `{text}`, or the name of one of `QUESTIONS`."""
    text = QUESTIONS.get(text, text)
    if "{text}" not in text:
        raise ValueError(
            f"it must contain the placeholder {{text}} or name a preset ({', '.join(QUESTIONS)})"
        )
    return text


class _Pixels:
    """One RGB PIL image → the model's pixel tensor (picklable; loads the image processor from
    the model folder — no weights — in whichever process first needs it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._proc: Any = None

    def __call__(self, image: Any) -> Any:
        if self._proc is None:
            from transformers import AutoImageProcessor

            self._proc = AutoImageProcessor.from_pretrained(self.path, local_files_only=True)
        return self._proc(images=[image], return_tensors="pt")["pixel_values"][0]


class VQAScorer(LazyModel):
    """A lazy `PairScorer`: VQAScore of a transformers generative VLM (see the module doc)."""

    backend: ClassVar[str] = "vqa"
    description = "VQAScore of a generative VLM (transformers image-text-to-text): pair scorer"
    options: ClassVar[Mapping[str, Option]] = {
        **COMMON,
        "score": choice(*SCORES, default="vqa"),
        "question": Option(_question, QUESTION),
        "answer": Option(str, "Yes"),
        "negative": Option(str, "No"),
    }
    _not_pickled = ("_model", "_processor")

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.score_mode = self.spec.get("score") or "vqa"
        self.question = _question(self.spec.get("question") or QUESTION)
        self.answer = self.spec.get("answer") or "Yes"
        self.negative = self.spec.get("negative") or "No"
        self._pixels = _Pixels(str(self.source.path))
        self._processor: Any = None

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "score": self.score_mode,
            "question": self.question,
            "answer": self.answer,
            "negative": self.negative,
        }

    @property
    def preprocess(self) -> _Pixels:
        return self._pixels

    # -- the primitive ----------------------------------------------------------------------------
    def prompt(self, text: str) -> str:
        """The chat-templated question about `text`, up to where the answer starts."""
        return self.user_turn(self.question.format(text=text))

    def user_turn(self, text: str) -> str:
        """The chat template of one user turn (the image, then `text`), up to the reply."""
        self._ensure_loaded()
        if not getattr(self._processor, "chat_template", None):
            raise ModelError(
                f"{self.name}: its processor has no chat template; this backend places the "
                "question and answer with it (processors without one, such as base BLIP-2 or "
                "PaliGemma checkpoints, are not supported yet)"
            )
        messages = [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}
        ]
        return self._processor.apply_chat_template(messages, add_generation_prompt=True)

    def answer_logprobs(
        self, pixels: Any, prompts: Sequence[str], answer: str | Sequence[str]
    ) -> list[Any]:
        """Per-token log-probabilities (float64 arrays) of `answer` (one for all rows, or one per
        row) after each prompt, each with the image `pixels[i]` (one batch, right-padded)."""
        import torch

        model = self._ensure_loaded()
        answers = [answer] * len(prompts) if isinstance(answer, str) else list(answer)
        full = [f"{p} {a}" for p, a in zip(prompts, answers, strict=True)]
        enc = self._encode(full, pixels)
        n_prompt = self._prompt_lengths(prompts, pixels, enc["input_ids"])
        with torch.inference_mode():
            logits = model(**enc).logits.to(torch.float64)
        logp = torch.log_softmax(logits, dim=-1)
        ids, lengths = enc["input_ids"], enc["attention_mask"].sum(dim=1)
        out = []
        for i, start in enumerate(n_prompt):
            end = int(lengths[i])
            if end <= start:
                raise ModelError(f"{self.name}: {answers[i]!r} has no tokens of its own")
            pos = torch.arange(start, end)
            out.append(logp[i, pos - 1, ids[i, pos]].cpu().numpy())
        return out

    def _encode(self, texts: list[str], pixels: Any) -> dict[str, Any]:
        from PIL import Image

        size = (int(pixels.shape[-1]), int(pixels.shape[-2]))
        stand_in = [Image.new("RGB", size)] * len(texts)
        enc = self._processor(text=texts, images=stand_in, return_tensors="pt", padding=True)
        model = self._ensure_loaded()
        dtype = next(model.parameters()).dtype if enc["pixel_values"].is_floating_point() else None
        enc["pixel_values"] = pixels.to(dtype or enc["pixel_values"].dtype)
        return {k: v.to(self.device) if hasattr(v, "to") else v for k, v in enc.items()}

    def _prompt_lengths(self, prompts: Sequence[str], pixels: Any, full_ids: Any) -> list[int]:
        """Each prompt's own token count; its tokens must be the first ones of prompt +
        answer, else the answer's log-probability would be of other tokens."""
        enc = self._encode(list(prompts), pixels)
        out = []
        for i, n in enumerate(enc["attention_mask"].sum(dim=1).tolist()):
            alone, both = enc["input_ids"][i, :n].tolist(), full_ids[i, :n].tolist()
            if alone != both:
                raise ModelError(
                    f"{self.name}: the prompt's tokens are not a prefix of prompt + answer "
                    f"(they end {alone[-3:]}, prompt + answer has {both[-3:]} there)"
                )
            out.append(int(n))
        return out

    # -- the PairScorer protocol ----------------------------------------------------------------
    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if len(texts) != int(images.shape[0]):
            raise ModelError(f"{self.name}: {int(images.shape[0])} images for {len(texts)} texts")
        if not texts:
            return np.zeros((0,), dtype=np.float32)
        prompts = [self.prompt(t) for t in texts]
        p_yes = self._probability(images, prompts, self.answer)
        if self.score_mode == "vqa":
            return p_yes.astype(np.float32)
        p_no = self._probability(images, prompts, self.negative)
        out = p_yes / (p_yes + p_no) if self.score_mode == "vqa_norm" else p_yes - p_no
        return out.astype(np.float32)

    def _probability(self, images: Any, prompts: list[str], answer: str) -> np.ndarray:
        """exp(mean log-probability of the answer's tokens), as the VQAScore reference."""
        return np.array([np.exp(lp.mean()) for lp in self.answer_logprobs(images, prompts, answer)])

    # -- loading ----------------------------------------------------------------------------------
    def _load(self) -> Any:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        path = str(self.source.path)
        try:
            processor = AutoProcessor.from_pretrained(path, local_files_only=True)
            model = AutoModelForImageTextToText.from_pretrained(
                path, dtype=torch_dtype(self.dtype), local_files_only=True
            )
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise self._load_error(exc) from exc
        tok = getattr(processor, "tokenizer", None)
        if tok is None or tok.pad_token is None:
            raise ModelError(f"{self.name}: the processor's tokenizer has no pad token")
        tok.padding_side = "right"
        self._processor = processor
        model.to(self.device)
        model.eval()
        return model

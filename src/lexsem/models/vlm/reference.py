"""VQAScore as the reference implementation computes it, per model family: one `Recipe` per
family, as data (`RECIPES`, keyed by the family name a model's config gives as `model_type`).

The reference is linzhiqiu/t2v_metrics (PyPI `t2v-metrics` 3.0; "Evaluating Text-to-Visual
Generation with Image-to-Text Generation", §3), `t2v_metrics/models/vqascore_models/`. A recipe
says, for one family, what its model class there does:

- `prompt`: the whole user turn up to where the answer starts, with `{text}` for the question
  (system message included); None: the processor's chat template, as the reference calls it;
- `question` / `answer`: the default question template (`{text}`: the caption) and answer word;
- `read`: ``mean``: the answer (and `end`) teacher-forced after the prompt, score = exp(−mean
  token cross-entropy) over those tokens (the reference's `CrossEntropyLoss(reduction='mean')`
  over its label tokens); ``first``: the probability greedy `generate(max_new_tokens=1)`
  gives the first token of the answer's own tokens (the model's generation config's
  repetition penalty applied, as `generate` applies it);
- `end`: the tokenizer's end-of-sequence token follows the answer (LLaVA-1.5's `Yes</s>`,
  Flan-T5's `yes</s>`), so a ``mean`` score is sqrt(P(answer) · P(end | answer)) for a one-token
  answer;
- `image`: ``pad`` (expand to a square with the image processor's mean colour, the image in the
  middle: `mm_utils.expand2square`), ``crop`` (resize the short side to the processor's size,
  bicubic, and centre-crop a square: InstructBLIP's torchvision transform), ``qwen_resize``
  (`qwen_vl_utils.fetch_image`'s resize to multiples of 28, which the Qwen2-VL model of the
  reference calls before the processor) or ``whole``
  (`lexsem.models.vlm.reference_images`);
- `kinds`: the layouts (`lexsem.models.vlm.layout`) the recipe is for: InstructBLIP's recipe is
  the Flan-T5 model's, not the Vicuna one's.

A family not in the table keeps lexsem's own VQAScore (`score=p_yes`: the chat template,
`QUESTION`, exp(mean log P) of `Yes`). Adding a family is one entry. The `vqa:` backend's
`score=vqa` uses these recipes (`lexsem.models.backends.vqa`); `vgpt:...?score=t2v` is the
reference's VGPTScore setting (empty question, the caption as the answer) for the ``mean``
recipes (`lexsem.models.backends.vgpt`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lexsem.models.vlm.image_token_processor import VICUNA_V1_SYSTEM

__all__ = ["RECIPES", "RECIPES_VERSION", "Recipe", "recipe_for"]

# in every `score=vqa` fingerprint: a change of any recipe changes this
RECIPES_VERSION = "t2v_metrics-3.0/1"

SYSTEM_MSG = VICUNA_V1_SYSTEM  # t2v_metrics/constants.py SYSTEM_MSG
FIGURE_QUESTION = 'Does this figure show "{text}"? Please answer yes or no.'
IMAGE_QUESTION = 'Does this image show "{text}"?'
IMAGE_QUESTION_YN = 'Does this image show "{text}"? Answer the question with Yes or No'

Read = Literal["mean", "first"]
ImagePrep = Literal["whole", "pad", "crop", "qwen_resize"]


@dataclass(frozen=True)
class Recipe:
    """One family's VQAScore in the reference (see the module doc for each field)."""

    name: str
    source: str
    question: str
    answer: str
    read: Read
    prompt: str | None = None
    end: bool = False
    image: ImagePrep = "whole"
    kinds: frozenset[str] = frozenset({"causal"})

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "source": self.source, "question": self.question,
            "answer": self.answer, "read": self.read, "prompt": self.prompt, "end": self.end,
            "image": self.image,
        }  # fmt: skip


_LLAVA_CHAT = SYSTEM_MSG + " USER: <image>\n{text} ASSISTANT:"  # `format_question(.., 'chat')`
_QWEN_1_5 = (  # LLaVA-NeXT's `conv_templates['qwen_1_5']` (CHATML) with `<image>\n` first
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\n<image>\n{text}<|im_end|>\n<|im_start|>assistant\n"
)
_DIR = "t2v_metrics/models/vqascore_models/"

RECIPES: Mapping[str, Recipe] = {
    "llava": Recipe(
        "llava-1.5", _DIR + "llava_model.py", FIGURE_QUESTION, "Yes", "mean",
        prompt=_LLAVA_CHAT, end=True, image="pad",
    ),
    "llava_next": Recipe(
        "llava-1.6", _DIR + "llava16_model.py", FIGURE_QUESTION, "Yes", "mean",
        prompt=_LLAVA_CHAT, end=True, image="pad",
    ),
    "instructblip": Recipe(
        "instructblip-flant5", _DIR + "instructblip_model.py", "Question: " + FIGURE_QUESTION,
        "yes", "mean", prompt="{text}", end=True, image="crop", kinds=frozenset({"seq2seq"}),
    ),
    "qwen2_vl": Recipe(
        "qwen2-vl", _DIR + "qwen2vl_model.py", IMAGE_QUESTION, "Yes", "first",
        image="qwen_resize",
    ),
    "qwen2_5_vl": Recipe(
        "qwen2.5-vl", _DIR + "qwen2vl_model.py", IMAGE_QUESTION, "Yes", "first",
        image="qwen_resize",
    ),
    "llava_onevision": Recipe(
        "llava-onevision", _DIR + "llavaov_model.py", IMAGE_QUESTION_YN, "Yes", "first",
        prompt=_QWEN_1_5,
    ),
    "clip_t5": Recipe(  # CLIP-FlanT5 (`vlm/clip_t5.py`); `format_question(.., 't5_chat')`
        "clip-flant5", _DIR + "clip_t5_model.py", FIGURE_QUESTION, "Yes", "mean",
        prompt=SYSTEM_MSG + " USER: <image>\n{text} ASSISTANT: ", end=True, image="pad",
        kinds=frozenset({"seq2seq"}),
    ),
    "paligemma": Recipe(
        "paligemma", _DIR + "paligemma_model.py", FIGURE_QUESTION, "Yes", "first",
        prompt="{text}", kinds=frozenset({"prefix_lm"}),
    ),
}  # fmt: skip


def recipe_for(family: str, kind: str) -> Recipe | None:
    """The reference's recipe for a model of `family` (its config's `model_type`) whose layout
    is of `kind`; None when the reference has none."""
    recipe = RECIPES.get(family)
    return recipe if recipe is not None and kind in recipe.kinds else None

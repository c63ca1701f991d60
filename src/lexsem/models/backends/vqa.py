"""`vqa:` backend: VQAScore of a generative VLM (transformers `AutoModelForImageTextToText` with
its processor), as a pair scorer: how likely the model answers "Yes" to a question whether the
image shows the caption.

Spec: `vqa:NAME?score=vqa|p_yes|vqa_norm|vqa_diff&question=...&answer=...&negative=No`;
`question` is a template with `{text}` or a preset: `t17_1` ... `t17_5`, the five prompt
paraphrases of SugarCrepe++ Table 17 (prompt sensitivity), verbatim. The options and the scores
from the answers' probabilities are VQAScore's one definition (`lexsem.models.vqascore`),
shared with the chat models that return log-probabilities.

- `vqa` (default): the VQAScore reference's score (t2v_metrics), computed for the model's
  family as the reference's code computes it (`lexsem.models.vlm.reference`: its prompt with
  its system message, its question and answer word, its image padding or cropping, and either
  exp(−mean cross-entropy) of the teacher-forced answer *and end-of-turn token* — LLaVA-1.5 /
  1.6, InstructBLIP-Flan-T5 — or the first generated token's probability — Qwen2-VL,
  Qwen2.5-VL, LLaVA-OneVision, PaliGemma). `question`, `answer` and `format` (the whole user
  turn) replace the recipe's. A family the reference does not cover gets `p_yes`'s
  computation;
- `p_yes`: exp(mean log-probability) of the answer's own tokens (default `Yes`), teacher-forced
  after the chat template's user turn of the image and `Does this figure show "{text}"? Please
  answer yes or no.` (no system message, the image as decoded, no end-of-turn token; the
  answer is the assistant's reply, where the chat template's generation prompt ends;
  `lexsem.models.vlm.layout` says where the answer goes in each model family);
- `vqa_norm`: P(yes) / (P(yes) + P(no)), each the summed probability of the answer's case and
  space variants (`Yes`, `yes`, `YES`, with and without a leading space; variants with the
  same tokens count once), after `p_yes`'s prompt;
- `vqa_diff`: P(yes) - P(no), the same sums.

The log-probabilities come from `GenerativeVLM.logprobs` and `GenerativeVLM.first_token_logprobs`
(`lexsem.models.vlm`): prompt and answer encoded together, every input the processor makes
passed to the model, the image and the question's shared start computed once for every caption
of an image (teacher-forced path).

The question, the answer strings, the format, the score and (for `vqa`) the recipe table's
version are in the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.options import Option
from lexsem.models.vlm.generative import VLM_OPTIONS, VLMPairScorer
from lexsem.models.vlm.reference import RECIPES_VERSION, Recipe, recipe_for
from lexsem.models.vlm.reference_images import prepare_image
from lexsem.models.vqascore import QUESTION, VQA_OPTIONS, question_template, vqa_score

__all__ = ["VQAScorer", "variants"]


def variants(answer: str) -> list[str]:
    """The case and leading-space variants of an answer word, the word itself first."""
    forms = dict.fromkeys([answer, answer.lower(), answer.capitalize(), answer.upper()])
    return [*forms, *(f" {f}" for f in forms)]


class VQAScorer(VLMPairScorer):
    """A lazy `PairScorer`: VQAScore of a transformers generative VLM (see the module doc)."""

    backend: ClassVar[str] = "vqa"
    description = "VQAScore of a generative VLM (transformers image-text-to-text): pair scorer"
    options: ClassVar[Mapping[str, Option]] = {
        **VLM_OPTIONS,
        **VQA_OPTIONS,
    }

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.score_mode = self.spec.get("score") or "vqa"
        given = self.spec.options  # the options the spec sets (`get` gives defaults too)
        asked = self.spec.get("question") if "question" in given else None
        self._asked_question = None if asked is None else question_template(asked)
        self._asked_answer: str | None = self.spec.get("answer") if "answer" in given else None
        self.no_word = self.spec.get("negative") or "No"

    # -- the definition ---------------------------------------------------------------------------
    @property
    def recipe(self) -> Recipe | None:
        """The reference's recipe for this model's family under `score=vqa` (None: `p_yes`'s
        computation: another score, or a family the reference does not cover)."""
        if self.score_mode != "vqa":
            return None
        layout = self.layout
        return recipe_for(layout.model_type, layout.kind)

    @property
    def question(self) -> str:
        """The question template (`{text}`: the caption)."""
        if self._asked_question is not None:
            return self._asked_question
        recipe = self.recipe if self.score_mode == "vqa" else None
        return question_template(recipe.question) if recipe else QUESTION

    @property
    def yes_word(self) -> str:
        """The answer whose probability is the score."""
        if self._asked_answer:
            return self._asked_answer
        recipe = self.recipe if self.score_mode == "vqa" else None
        return recipe.answer if recipe else "Yes"

    def _fingerprint_options(self) -> dict[str, Any]:
        reference = self.score_mode == "vqa"
        default = None if reference else QUESTION  # `vqa`: the family's (in the recipes)
        out = {
            **self._vlm_fingerprint(),
            "score": self.score_mode,
            "question": self._asked_question or default,
            "answer": self._asked_answer or (None if reference else "Yes"),
            "negative": self.no_word,
        }
        if reference:
            out["recipes"] = RECIPES_VERSION
        return out

    def prompt(self, text: str) -> str:
        """The user turn asking the question about `text`, up to where the answer starts."""
        question = self.question.format(text=text)
        recipe = self.recipe
        if recipe is not None and recipe.prompt is not None and self.user_format is None:
            return recipe.prompt.replace("{text}", question)
        return self.user_turn(question)

    # -- scores -----------------------------------------------------------------------------------
    def _forms(self, prompt: str, word: str) -> list[str]:
        """`word`'s variants with distinct tokens after `prompt`."""
        seen: dict[tuple[int, ...], str] = {}
        for form in variants(word):
            seen.setdefault(self.continuation_ids(prompt, form), form)
        return list(seen.values())

    def _reference_scores(self, recipe: Recipe, image: Any, texts: list[str]) -> np.ndarray:
        image = prepare_image(recipe.image, image, self._processor)
        prompts = [self.prompt(t) for t in texts]
        tok = self._processor.tokenizer
        if recipe.read == "first":
            ids = tok(self.yes_word, add_special_tokens=False)["input_ids"]
            if not ids:
                raise ModelError(f"{self.name}: the answer {self.yes_word!r} has no tokens")
            lps = self.first_token_logprobs(image, prompts, [ids[0]] * len(prompts))
            return np.exp(lps)
        answer = self.yes_word + (tok.eos_token if recipe.end else "")
        lps = self.logprobs(image, [(p, answer) for p in prompts])
        return np.array([np.exp(lp.mean()) for lp in lps])

    def _scores(self, image: Any, texts: list[str]) -> np.ndarray:
        recipe = self.recipe
        if recipe is not None:
            return self._reference_scores(recipe, image, texts)
        prompts = [self.prompt(t) for t in texts]
        if self.score_mode in ("vqa", "p_yes"):
            lps = self.logprobs(image, [(p, self.yes_word) for p in prompts])
            return np.array([np.exp(lp.mean()) for lp in lps])
        rows, spans = [], []
        for p in prompts:
            yes, no = self._forms(p, self.yes_word), self._forms(p, self.no_word)
            spans.append((len(rows), len(rows) + len(yes), len(rows) + len(yes) + len(no)))
            rows += [(p, f) for f in (*yes, *no)]
        probs = np.array([np.exp(lp.sum()) for lp in self.logprobs(image, rows)])
        yes_p = np.array([probs[a:b].sum() for a, b, _ in spans])
        no_p = np.array([probs[b:c].sum() for _, b, c in spans])
        return vqa_score(self.score_mode, yes_p, no_p)

"""`vqa:` backend: VQAScore of a generative VLM (transformers `AutoModelForImageTextToText` with
its processor and chat template), as a pair scorer: how likely the model answers "Yes" to
`Does this figure show "{text}"? Please answer yes or no.` about the image.

Spec: `vqa:NAME?score=vqa|vqa_norm|vqa_diff&question=...&answer=Yes&negative=No`; `question`
is a template with `{text}` or a preset: `t17_1` ... `t17_5`, the five prompt paraphrases of
SugarCrepe++ Table 17 (prompt sensitivity), verbatim. The options, the question and the scores
from the answers' probabilities are VQAScore's one definition (`lexsem.models.vqascore`), shared
with the chat models that return log-probabilities.

- `vqa` (default): the VQAScore reference's score, exp(mean log-probability) of the answer's
  own tokens, teacher-forced after the question (the answer is the assistant's reply, where
  the chat template's generation prompt ends; `lexsem.models.vlm.layout` says where the
  answer goes in each model family);
- `vqa_norm`: P(yes) / (P(yes) + P(no)), each the summed probability of the answer's case and
  space variants (`Yes`, `yes`, `YES`, with and without a leading space; variants with the
  same tokens count once);
- `vqa_diff`: P(yes) - P(no), the same sums.

The log-probabilities come from `GenerativeVLM.logprobs` (`lexsem.models.vlm`): prompt and
answer encoded together, every input the processor makes passed to the model, the image and
the question's shared start computed once for every caption of an image.

The question, the answer strings, the format and the score are in the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from lexsem.models.options import Option
from lexsem.models.vlm.generative import VLM_OPTIONS, VLMPairScorer
from lexsem.models.vqascore import QUESTION, VQA_OPTIONS, question_template, vqa_score

__all__ = ["VQAScorer"]


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
        self.question = question_template(self.spec.get("question") or QUESTION)
        self.yes_word = self.spec.get("answer") or "Yes"
        self.no_word = self.spec.get("negative") or "No"

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            **self._vlm_fingerprint(),
            "score": self.score_mode,
            "question": self.question,
            "answer": self.yes_word,
            "negative": self.no_word,
        }

    def prompt(self, text: str) -> str:
        """The user turn asking the question about `text`, up to where the answer starts."""
        return self.user_turn(self.question.format(text=text))

    def _forms(self, prompt: str, word: str) -> list[str]:
        """`word`'s variants with distinct tokens after `prompt`."""
        seen: dict[tuple[int, ...], str] = {}
        for form in variants(word):
            seen.setdefault(self.continuation_ids(prompt, form), form)
        return list(seen.values())

    def _scores(self, image: Any, texts: list[str]) -> np.ndarray:
        prompts = [self.prompt(t) for t in texts]
        if self.score_mode == "vqa":
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

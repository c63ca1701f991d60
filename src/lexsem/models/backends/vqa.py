"""`vqa:` backend: VQAScore of a generative VLM (transformers `AutoModelForImageTextToText` with
its processor and chat template), as a pair scorer: how likely the model answers "Yes" to
`Does this figure show "{text}"? Please answer yes or no.` about the image.

Spec: `vqa:NAME?score=vqa|vqa_norm|vqa_diff&question=...&answer=Yes&negative=No`; `question`
is a template with `{text}` or a preset: `t17_1` ... `t17_5`, the five prompt paraphrases of
SugarCrepe++ Table 17 (prompt sensitivity), verbatim.

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

from lexsem.models.options import Option, choice
from lexsem.models.vlm.generative import VLM_OPTIONS, VLMPairScorer

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
        "score": choice(*SCORES, default="vqa"),
        "question": Option(_question, QUESTION),
        "answer": Option(str, "Yes"),
        "negative": Option(str, "No"),
    }

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.score_mode = self.spec.get("score") or "vqa"
        self.question = _question(self.spec.get("question") or QUESTION)
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
        return yes_p / (yes_p + no_p) if self.score_mode == "vqa_norm" else yes_p - no_p

"""VQAScore (Lin et al., "Evaluating Text-to-Visual Generation with Image-to-Text Generation",
§3): how likely a generative model answers "Yes" to `Does this figure show "{text}"? Please
answer yes or no.` about an image — one definition for the local `vqa:` backend and for chat
models that return log-probabilities (`openai:`, a user's provider).

Options (`VQA_OPTIONS`, declared by both): `score=vqa|p_yes|vqa_norm|vqa_diff`, `question` (a
template with `{text}`, or a preset `t17_1` ... `t17_5`: the five prompt paraphrases of
SugarCrepe++ Table 17, verbatim), `answer` (default `Yes`) and `negative` (default `No`).

Scores (`vqa_score`, from the answers' probabilities):

- `vqa`: the reference's VQAScore. The local `vqa:` backend computes it per model family as
  the reference's code does (`lexsem.models.vlm.reference`: its prompt and system message, its
  image padding, its answer tokens with the end-of-turn token where it has one). A chat model
  gives P(answer) from its API's log-probabilities: no API shows the end-of-turn token, so
  this is the reference's score without the end-of-turn factor (t2v_metrics' own GPT-4o model,
  `gpt4v_model.py`, reads the first token's top log-probabilities too, but takes the first
  `Yes`/`yes` entry alone, or 1 - P(`No`/`no`) when a no comes first; lexsem sums the
  answer's variants);
- `p_yes`: P(answer) alone, exp(mean log-probability) of the answer's own tokens after the
  chat template's question (no system message, no padding, no end token); for a chat model
  the same number as `vqa`;
- `vqa_norm` = P(answer) / (P(answer) + P(negative)), 0.5 when both are 0 (neither among an
  API's top log-probabilities); `vqa_diff` = P(answer) - P(negative).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.models.options import Option, choice

__all__ = [
    "QUESTION",
    "QUESTIONS",
    "SCORES",
    "VQA_OPTIONS",
    "VQASettings",
    "question_template",
    "vqa_score",
]

QUESTION = 'Does this figure show "{text}"? Please answer yes or no.'
SCORES = ("vqa", "p_yes", "vqa_norm", "vqa_diff")
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


def question_template(text: str) -> str:
    """A question template with `{text}`, or the name of one of `QUESTIONS`."""
    text = QUESTIONS.get(text, text)
    if "{text}" not in text:
        raise ValueError(
            f"it must contain the placeholder {{text}} or name a preset ({', '.join(QUESTIONS)})"
        )
    return text


VQA_OPTIONS: Mapping[str, Option] = {
    "score": choice(*SCORES, default="vqa"),
    "question": Option(question_template, QUESTION),
    "answer": Option(str, "Yes"),
    "negative": Option(str, "No"),
}


@dataclass(frozen=True)
class VQASettings:
    """A model's VQAScore settings: the score, the question template, the answer scored and
    the other one."""

    score: str = "vqa"
    question: str = QUESTION
    answer: str = "Yes"
    negative: str = "No"

    @classmethod
    def of(cls, spec: Any) -> VQASettings:
        """The settings a spec's options give (`VQA_OPTIONS`)."""
        return cls(
            spec.get("score") or "vqa",
            question_template(spec.get("question") or QUESTION),
            spec.get("answer") or "Yes",
            spec.get("negative") or "No",
        )

    def describe(self) -> dict[str, str]:
        return {
            "answer": self.answer,
            "negative": self.negative,
            "question": self.question,
            "score": self.score,
        }


def vqa_score(mode: str, yes: Any, no: Any = None) -> Any:
    """The score `mode` from P(answer) `yes` and P(negative) `no` (floats or arrays)."""
    if mode in ("vqa", "p_yes"):
        return yes
    if mode == "vqa_diff":
        return yes - no
    if mode != "vqa_norm":
        raise ValueError(f"unknown score {mode!r} (one of {', '.join(SCORES)})")
    if isinstance(yes, np.ndarray):
        total = yes + no
        return np.divide(yes, total, out=np.full_like(total, 0.5), where=total > 0)
    return yes / (yes + no) if yes + no > 0 else 0.5

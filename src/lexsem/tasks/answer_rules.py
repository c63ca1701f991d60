"""How the free-form answers to a multiple-choice prompt are scored: the rule of each prompt's
authors, and lexsem's strict parser.

An `AnswerRule` is data (its kind, the markers it counts, where it is from); `read_answer` is
the one pure function that reads an answer by a rule into a `ParsedAnswer`
(`lexsem.tasks.answers`), whose option the task compares with the right one. Kinds:

- ``strict``: `lexsem.tasks.answers.parse_answer`, lexsem's deterministic parser (leading
  marker, `none`, markers anywhere, a quoted option, a refusal, in that order);
- ``markers``: the answer contains exactly one distinct marker of `AnswerRule.markers`
  (literal strings, the i-th naming option i, found anywhere in the answer, a quoted caption
  included): that option (rule ``markers``); several distinct ones: ``multiple``; none:
  ``unparseable`` (rule ``no marker``). Nothing else is read: not a bare `2`, not `neither`.

Each prompt preset (`lexsem.tasks.choice.ChoicePrompt.rule`) carries its authors' rule:

- `sc_gpt4v`: ``markers`` `(1)`, `(2)` — SugarCrepe, GPT-4V evaluation (gpt-4v-results
  readme). The readme gives the prompt and the counts, not the rule; the rule is the one that
  reproduces the published `correct` flag of every one of its 15,024 answers (both orderings,
  seven subsets; docs/fidelity.md, "SugarCrepe GPT-4V answers"): `Neither caption ... (2)`
  is a hit when (2) is right, a bare `2` is not, `Neither (1) nor (2)` is a miss.
- `scpp1`, `scpp2`, `scpp3`, `scpp_order`: ``strict``. SugarCrepe++ (§3.3, App. G.1) does
  not say how answers were read, and its repository (Sri-Harsha/scpp) holds no code of the
  prompted evaluation (its evaluations are of embedding models only).

`ANSWER_RULES`: which rule a run reads answers by (`EvalConfig.answer_rule`): ``authors``, the
preset's own (`ChoicePrompt.reading`), or ``strict``, the strict parser for every preset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from lexsem.tasks.answers import ParsedAnswer, parse_answer

__all__ = [
    "ANSWER_RULES",
    "STRICT",
    "AnswerRule",
    "AnswerRuleChoice",
    "marker_rule",
    "read_answer",
]

AnswerRuleChoice = Literal["authors", "strict"]
ANSWER_RULES: tuple[AnswerRuleChoice, ...] = get_args(AnswerRuleChoice)


@dataclass(frozen=True)
class AnswerRule:
    """A way of reading answers: `kind` (``strict`` or ``markers``), the `markers` a
    ``markers`` rule counts (the i-th names option i), and its `source`."""

    kind: Literal["strict", "markers"]
    markers: tuple[str, ...] = ()
    source: str = ""

    def describe(self) -> str:
        """The rule in words, for tables and docs."""
        if self.kind == "strict":
            return "lexsem's strict parser (lexsem.tasks.answers)"
        marks = "/".join(self.markers)
        return f"exactly one distinct marker of {marks}, the right one ({self.source})"


STRICT = AnswerRule("strict", source="lexsem.tasks.answers.parse_answer")


def marker_rule(markers: Sequence[str], source: str) -> AnswerRule:
    """A ``markers`` rule: `markers[i]` names option i + 1."""
    if not markers or len(set(markers)) != len(markers):
        raise ValueError("a markers rule needs distinct markers, one per option")
    return AnswerRule("markers", tuple(markers), source)


def read_answer(rule: AnswerRule, answer: str | None, options: int | Sequence[str]) -> ParsedAnswer:
    """`answer` read by `rule`, for a prompt with `options` (their number, or their texts in
    prompt order)."""
    if rule.kind == "strict":
        return parse_answer(answer, options)
    n = options if isinstance(options, int) else len(options)
    text = answer or ""
    named = {i for i, marker in enumerate(rule.markers[:n], 1) if marker in text}
    if len(named) == 1:
        return ParsedAnswer("option", named.pop(), "markers")
    if named:
        return ParsedAnswer("multiple", None, "markers")
    return ParsedAnswer("unparseable", None, "no marker")

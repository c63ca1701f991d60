"""Prompted multiple choice: the papers' prompts, every ordering of the options, and the scores
of the answers (accuracy per prompt x ordering, circular accuracy, position bias, answers that
name no single option).

Prompts, verbatim (`PROMPTS`):

- `scpp1`, `scpp2`, `scpp3`: SugarCrepe++ §3.3 (GPT-4o, Table 8), asking which of the three
  captions does *not* match the image (Prompts 1 and 2 also allow `none`);
- `scpp_order`: SugarCrepe++ App. G.1 (BakLLaVA, Figure 7, Table 18), the same question with
  the options in every order;
- `sc_gpt4v`: SugarCrepe's GPT-4V evaluation (its published `gpt-4v-results`), asking which of
  two captions *best* describes the image, run with the positive first and the negative first.

Orderings (`orderings`): for a triplet the position of the negative N among (P1, P2) — `NPP`
= (N, P1, P2), `PNP` = (P1, N, P2), `PPN` = (P1, P2, N), as App. G.1 names them; the paper's
Prompts 1-3 list N first (`NPP`). For a pair, `pos_first` = (C+, C-) and `neg_first` =
(C-, C+). The hit of a "does not match" prompt is the answer naming N's position; of a "best
describes" prompt, the positive's. Answers are read by the preset's authors' rule
(`ChoicePrompt.rule`; `lexsem.tasks.answer_rules`: for `sc_gpt4v`, SugarCrepe's count of the
`(1)`/`(2)` markers; for the SugarCrepe++ prompts, lexsem's strict parser
`lexsem.tasks.answers.parse_answer`), or with `answer_rule="strict"` by the strict parser for
every preset: an answer naming no option, several, `none`, or refusing is never a hit and is
counted by kind.

Scores (`score_choices`): accuracy per (prompt, ordering); circular accuracy (an item counts
when it is a hit under every ordering it was asked in, as in MMBench's CircularEval); the
distribution of the positions chosen (position bias: for a model with no preference each
position is chosen about equally, and a model always answering `(1)` scores exactly the share
of orderings that put the right option first); and the share of answers of each kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lexsem.tasks.answer_rules import STRICT, AnswerRule, AnswerRuleChoice, marker_rule, read_answer
from lexsem.tasks.answers import ParsedAnswer

__all__ = [
    "ORDERINGS",
    "PROMPTS",
    "Answer",
    "ChoicePrompt",
    "ChoiceScores",
    "options_of",
    "orderings",
    "render",
    "score_choices",
]


@dataclass(frozen=True)
class ChoicePrompt:
    """A prompt template with `{1}`, `{2}` (and `{3}`) for the options in order; `target` is
    what the right answer names: `negative` (which caption does not match) or `positive`
    (which caption describes the image). `source`: where it is from (paper and section).
    `rule`: how its authors read the answers (`lexsem.tasks.answer_rules`)."""

    name: str
    template: str
    n_options: int
    target: str  # "negative" | "positive"
    source: str
    rule: AnswerRule = STRICT

    def reading(self, choice: AnswerRuleChoice) -> AnswerRule:
        """The rule answers are read by: the authors' (`rule`) or the strict parser."""
        if choice not in ("authors", "strict"):
            raise ValueError(f"unknown answer rule {choice!r} (authors or strict)")
        return self.rule if choice == "authors" else STRICT

    def render(self, options: Sequence[str]) -> str:
        if len(options) != self.n_options:
            raise ValueError(f"prompt {self.name!r} takes {self.n_options} options")
        return self.template.format(None, *options)


_P3 = "(1) {1}; (2) {2}; (3) {3}"
# the SugarCrepe++ prompts keep the default rule, lexsem's strict parser: neither the paper nor
# its repository says how the answers were read (`lexsem.tasks.answer_rules`)
PROMPTS: dict[str, ChoicePrompt] = {
    p.name: p
    for p in (
        ChoicePrompt(
            "scpp1",
            "Do any of the following captions not match the image? (1) {1}; (2){2}; (3) {3}; "
            "provide output as (1), (2), (3) or none",
            3,
            "negative",
            "SugarCrepe++, §3.3, Prompt 1 (Table 8)",
        ),  # the paper's own spacing: "(2)<P1>"
        ChoicePrompt(
            "scpp2",
            f"Do any of these captions fail to correspond with the image? {_P3}; provide "
            "output as (1), (2), (3) or none",
            3,
            "negative",
            "SugarCrepe++, §3.3, Prompt 2 (Table 8)",
        ),
        ChoicePrompt(
            "scpp3",
            f"Do any of these captions fail to correspond with the image? {_P3}; provide "
            "output as (1), (2) or (3)",
            3,
            "negative",
            "SugarCrepe++, §3.3, Prompt 3 (Table 8)",
        ),
        ChoicePrompt(
            "scpp_order",
            f"Which one of the three captions does not match the image? {_P3}; provide output "
            "as either (1), (2), or (3). Do not provide any explanation",
            3,
            "negative",
            "SugarCrepe++, App. G.1 (Figure 7, Table 18)",
        ),
        ChoicePrompt(
            "sc_gpt4v",
            "Which caption best describes the image?\n(1) {1}\n (2) {2}\nOutput (1) or (2).",
            2,
            "positive",
            "SugarCrepe, GPT-4V evaluation (its published gpt-4v-results)",
            marker_rule(("(1)", "(2)"), "SugarCrepe, GPT-4V evaluation (gpt-4v-results readme)"),
        ),
    )
}

ORDERINGS: dict[int, tuple[str, ...]] = {3: ("NPP", "PNP", "PPN"), 2: ("pos_first", "neg_first")}


def orderings(n_options: int) -> tuple[str, ...]:
    return ORDERINGS[n_options]


def options_of(item: Any, ordering: str) -> tuple[list[str], int, int]:
    """The options of `item` in `ordering`: (texts, position of the negative, position of the
    positive — for a triplet the first of P1, P2), positions 1-based."""
    if hasattr(item, "p1"):
        order = {"NPP": ("n", "p1", "p2"), "PNP": ("p1", "n", "p2"), "PPN": ("p1", "p2", "n")}
        if ordering not in order:
            raise ValueError(f"ordering {ordering!r} is not one of a triplet's: {', '.join(order)}")
        fields = order[ordering]
        texts = [getattr(item, f) for f in fields]
        return texts, fields.index("n") + 1, min(fields.index("p1"), fields.index("p2")) + 1
    if hasattr(item, "pos"):
        orders = {"pos_first": ("pos", "neg"), "neg_first": ("neg", "pos")}
        if ordering not in orders:
            raise ValueError(f"ordering {ordering!r} is not one of a pair's: {', '.join(orders)}")
        first = orders[ordering]
        texts = [getattr(item, f) for f in first]
        return texts, first.index("neg") + 1, first.index("pos") + 1
    raise TypeError(f"multiple choice needs triplet or pair items, not {type(item).__name__}")


def render(prompt: str | ChoicePrompt, item: Any, ordering: str) -> str:
    """The prompt text for `item` with its options in `ordering`."""
    p = PROMPTS[prompt] if isinstance(prompt, str) else prompt
    return p.render(options_of(item, ordering)[0])


@dataclass(frozen=True)
class Answer:
    """One recorded answer: to `prompt` about `item_id` (of `subset`), options in `ordering`."""

    item_id: str
    subset: str
    prompt: str
    ordering: str
    text: str | None


@dataclass
class ChoiceScores:
    """What `score_choices` computes; accuracies in percent. Keys `(prompt, ordering)` and, for
    circular accuracy, `prompt`."""

    accuracy: dict[tuple[str, str], float] = field(default_factory=dict)
    n: dict[tuple[str, str], int] = field(default_factory=dict)
    circular: dict[str, float] = field(default_factory=dict)
    n_circular: dict[str, int] = field(default_factory=dict)
    # prompt -> items of the benchmark the answers are about (answered or not), when known
    total: dict[str, int] = field(default_factory=dict)
    positions: dict[str, dict[int, float]] = field(default_factory=dict)  # share chosen, %
    kinds: dict[str, dict[str, float]] = field(default_factory=dict)  # share of each kind, %
    parsed: dict[tuple[str, str, str], ParsedAnswer] = field(default_factory=dict)
    hits: dict[tuple[str, str, str], bool] = field(default_factory=dict)  # (item, prompt, order)
    rule: dict[str, str] = field(default_factory=dict)  # prompt -> the answer rule that read it
    # where the two answer rules differ, (prompt, metric) -> (the other rule, its accuracy %,
    # the answers whose hit the two rules disagree on)
    other: dict[tuple[str, str], tuple[str, float, int]] = field(default_factory=dict)


def score_choices(
    answers: Iterable[Answer],
    items: Mapping[str, Any],
    *,
    answer_rule: AnswerRuleChoice = "authors",
) -> ChoiceScores:
    """Score recorded `answers` against `items` (by `"subset/item_id"` or `item_id`), each
    read by its prompt's `answer_rule` (`ChoicePrompt.reading`). ValueError for an ordering
    the item kind does not have, a prompt whose number of options is not the item's, or two
    answers to the same (item, prompt, ordering)."""
    out = ChoiceScores()
    by_prompt: dict[str, list[Answer]] = {}
    for a in answers:
        by_prompt.setdefault(a.prompt, []).append(a)
    for prompt, given in by_prompt.items():
        p = PROMPTS[prompt]
        rule = p.reading(answer_rule)
        out.rule[prompt] = answer_rule
        per_item: dict[str, list[bool]] = {}
        chosen: Counter[int] = Counter()
        kinds: Counter[str] = Counter()
        for a in given:
            item = items.get(f"{a.subset}/{a.item_id}", items.get(a.item_id))
            if item is None:
                raise KeyError(f"answer for unknown item {a.subset}/{a.item_id}")
            try:
                texts, neg, pos = options_of(item, a.ordering)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"item {a.subset}/{a.item_id}: {exc}") from None
            if len(texts) != p.n_options:
                raise ValueError(
                    f"item {a.subset}/{a.item_id}: prompt {prompt!r} lists {p.n_options} "
                    f"options, the item has {len(texts)} captions"
                )
            parsed = read_answer(rule, a.text, texts)
            hit = parsed.kind == "option" and parsed.option == (
                neg if p.target == "negative" else pos
            )
            key = (f"{a.subset}/{a.item_id}", prompt, a.ordering)
            if key in out.parsed:
                raise ValueError(f"two answers for {key[0]}, prompt {prompt!r}, {a.ordering}")
            out.parsed[key], out.hits[key] = parsed, hit
            per_item.setdefault(key[0], []).append(hit)
            kinds[parsed.kind] += 1
            if parsed.option is not None:
                chosen[parsed.option] += 1
            acc_key = (prompt, a.ordering)
            out.n[acc_key] = out.n.get(acc_key, 0) + 1
            out.accuracy[acc_key] = out.accuracy.get(acc_key, 0.0) + hit
        for acc_key in [k for k in out.accuracy if k[0] == prompt]:
            out.accuracy[acc_key] = 100.0 * out.accuracy[acc_key] / out.n[acc_key]
        out.n_circular[prompt] = len(per_item)
        out.circular[prompt] = 100.0 * sum(all(h) for h in per_item.values()) / len(per_item)
        total = sum(kinds.values())
        out.kinds[prompt] = {k: 100.0 * v / total for k, v in sorted(kinds.items())}
        n_chosen = sum(chosen.values())
        out.positions[prompt] = {
            k: 100.0 * chosen[k] / n_chosen if n_chosen else 0.0 for k in range(1, p.n_options + 1)
        }
    return out

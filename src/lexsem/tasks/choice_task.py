"""Prompted multiple choice as a task of a run: a generative model answers one of the papers'
prompts about each item's image with its captions as options, in every ordering
(SugarCrepe++, §3.3 and App. G.1; SugarCrepe's GPT-4V evaluation).

One task per prompt (`choice_scpp1`, `choice_scpp2`, `choice_scpp3`, `choice_scpp_order` for
triplets; `choice_sc_gpt4v` for pairs). Its columns are the model's answers, one per ordering
(`answer_NPP`, ...), each read by the prompt's answer rule (`lexsem.tasks.answer_rules`: the
authors' by default, or lexsem's strict parser) into a number (the rule that read it is kept
beside it): the option it names (1, 2, 3) or a code
for what else it is (`CODES`). With k-shot demonstrations (`Column.demo`), each other item is
shown with its options in the same ordering and answered rightly. Metrics: the accuracy
under each ordering (the right option: the negative for the "does not match" prompts, the
positive for `sc_gpt4v`) and `circular`, right under every ordering. An answer that names no
option is a miss, never guessed; the raw answers are in the run's item table. Where the
authors' rule is not the strict parser (`sc_gpt4v`), the task carries its reading by the other
rule (`Task.other_reading`): the run records both accuracies and the answers on which the two
rules disagree.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

from lexsem.stats.ties import Hits, TiePolicy
from lexsem.tasks.answer_rules import STRICT, AnswerRule, AnswerRuleChoice, read_answer
from lexsem.tasks.base import Column, Columns, Task
from lexsem.tasks.choice import ORDERINGS, PROMPTS, ChoicePrompt, options_of
from lexsem.tasks.shots import render_shots

__all__ = [
    "CHOICE_TASKS",
    "CODES",
    "choice_task",
    "choice_tasks_for",
    "expected_option",
    "read_by",
]

# what an answer that names no single option is read as (options are 1, 2, 3)
CODES = {"none": 0.0, "multiple": -1.0, "refusal": -2.0, "unparseable": -3.0}
_KIND_OF = {"triplet": 3, "pair": 2}


def expected_option(prompt: ChoicePrompt, ordering: str) -> int:
    """The right option (1-based) of `prompt` with the options in `ordering`."""
    if prompt.n_options == 3:
        stand_in = SimpleNamespace(n="n", p1="p1", p2="p2")
    else:
        stand_in = SimpleNamespace(pos="pos", neg="neg")
    _, neg, pos = options_of(stand_in, ordering)
    return neg if prompt.target == "negative" else pos


def _column(prompt: ChoicePrompt, ordering: str, reading: AnswerRule) -> Column:
    def get(item: Any) -> tuple[str, str]:
        return item.image, prompt.render(options_of(item, ordering)[0])

    def read(item: Any, answer: str) -> float:
        parsed = read_answer(reading, answer, options_of(item, ordering)[0])
        return float(parsed.option) if parsed.kind == "option" else CODES[parsed.kind]

    def demo(item: Any) -> tuple[str, str, str]:
        shot = render_shots(prompt, [item], ordering)[0]
        return item.image, shot.prompt, shot.answer

    def rule(item: Any, answer: str) -> str:
        return read_answer(reading, answer, options_of(item, ordering)[0]).rule

    return Column(f"answer_{ordering}", "answer", get, read, demo, rule)


def _compute(prompt: ChoicePrompt, orders: tuple[str, ...]):  # type: ignore[no-untyped-def]
    def compute(cols: Columns, policy: TiePolicy) -> dict[str, Hits]:
        out = {}
        for o in orders:
            chosen = np.asarray(cols[f"answer_{o}"], dtype=np.float64)
            out[o] = Hits(chosen == expected_option(prompt, o), np.zeros(len(chosen), bool))
        every = np.logical_and.reduce([out[o].hits for o in orders])
        out["circular"] = Hits(every, np.zeros(len(every), bool))
        return out

    return compute


def choice_task(name: str, answer_rule: AnswerRuleChoice = "authors") -> Task:
    """The task of prompt `name` (a key of `PROMPTS`), its answers read by `answer_rule`
    (`ChoicePrompt.reading`); with the reading by the other rule where the two differ."""
    task = _choice_task(name, answer_rule)
    if PROMPTS[name].rule == STRICT:
        return task
    other: AnswerRuleChoice = "strict" if answer_rule == "authors" else "authors"
    return replace(task, other_reading=_choice_task(name, other))


def _choice_task(name: str, answer_rule: AnswerRuleChoice) -> Task:
    prompt = PROMPTS[name]
    reading = prompt.reading(answer_rule)
    orders = ORDERINGS[prompt.n_options]
    chance = 100.0 / prompt.n_options
    return Task(
        name=f"choice_{name}",
        description=f"multiple choice, {prompt.source}: every ordering and circular",
        item_kind="triplet" if prompt.n_options == 3 else "pair",
        modality="answer",
        columns=tuple(_column(prompt, o, reading) for o in orders),
        metrics=(*orders, "circular"),
        compute=_compute(prompt, orders),
        chance={
            **dict.fromkeys(orders, chance),
            "circular": chance ** len(orders) / 100.0 ** (len(orders) - 1),
        },
        labels={**{o: o for o in orders}, "circular": "Circular"},
        metric_columns={o: (f"answer_{o}",) for o in orders},
        answer_rule=answer_rule,
    )


def read_by(task: Task, answer_rule: AnswerRuleChoice) -> Task:
    """`task` (a multiple-choice task of the catalog) with its answers read by `answer_rule`;
    any other task as it is."""
    if task.answer_rule is None or task.answer_rule == answer_rule:
        return task
    return _cached(CHOICE_TASKS[task.name], answer_rule)


@cache
def _cached(name: str, answer_rule: AnswerRuleChoice) -> Task:
    return choice_task(name, answer_rule)


CHOICE_TASKS = {f"choice_{name}": name for name in PROMPTS}


def choice_tasks_for(item_kind: str) -> list[str]:
    """The multiple-choice tasks of items of `item_kind`, the papers' main prompt first."""
    n = _KIND_OF.get(item_kind)
    return [t for t, name in CHOICE_TASKS.items() if PROMPTS[name].n_options == n]


CHOICE_SCPP1 = choice_task("scpp1")
CHOICE_SCPP2 = choice_task("scpp2")
CHOICE_SCPP3 = choice_task("scpp3")
CHOICE_SCPP_ORDER = choice_task("scpp_order")
CHOICE_SC_GPT4V = choice_task("sc_gpt4v")

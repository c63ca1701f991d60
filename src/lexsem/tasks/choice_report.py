"""Scores of recorded multiple-choice answers as tables (`lexsem score-answers`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lexsem.errors import DataError
from lexsem.tasks.choice import PROMPTS, Answer, ChoiceScores, score_choices

__all__ = ["choice_markdown", "choice_record", "score_recorded"]


def score_recorded(answers: Sequence[Answer], items: Sequence[Any], source: str) -> ChoiceScores:
    """`score_choices` over the benchmark's `items`, with errors naming `source` for answers
    about unknown items or prompts that do not fit the items (3 options for triplets, 2 for
    pairs)."""
    by_key = {f"{it.subset}/{it.id}": it for it in items}
    for a in answers:
        item = by_key.get(f"{a.subset}/{a.item_id}")
        if item is None:
            raise DataError(f"{source}: an answer about item {a.subset}/{a.item_id}, which the "
                            "benchmark selection does not have")  # fmt: skip
    try:
        return score_choices(answers, by_key)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{source}: {exc}") from None


def choice_markdown(s: ChoiceScores) -> str:
    lines = ["| prompt | ordering | answers | accuracy (%) |", "|---|---|---:|---:|"]
    for (prompt, ordering), acc in s.accuracy.items():
        lines.append(f"| {prompt} | {ordering} | {s.n[(prompt, ordering)]} | {acc:.2f} |")
    lines += ["", "| prompt | items | circular (%) | positions chosen (%) | answers (%) |",
              "|---|---:|---:|---|---|"]  # fmt: skip
    for prompt, circ in s.circular.items():
        pos = ", ".join(f"({k}) {v:.1f}" for k, v in s.positions[prompt].items())
        kinds = ", ".join(f"{k} {v:.1f}" for k, v in s.kinds[prompt].items())
        lines.append(f"| {prompt} | {s.n_circular[prompt]} | {circ:.2f} | {pos} | {kinds} |")
    lines += [
        "",
        "circular: items right under every ordering they were asked in; positions: the share "
        "of parsed answers naming each position; answers: option / none / multiple / refusal "
        "/ unparseable (lexsem.tasks.answers). Prompts: "
        + "; ".join(f"{p}: {PROMPTS[p].source}" for p in s.circular),
    ]
    return "\n".join(lines) + "\n"


def choice_record(s: ChoiceScores) -> dict[str, Any]:
    """Every score and every parsed answer, as JSON."""
    return {
        "accuracy": [
            {"prompt": p, "ordering": o, "n": s.n[(p, o)], "accuracy": acc}
            for (p, o), acc in s.accuracy.items()
        ],
        "circular": [
            {"prompt": p, "items": s.n_circular[p], "accuracy": acc}
            for p, acc in s.circular.items()
        ],
        "positions": s.positions,
        "kinds": s.kinds,
        "answers": [
            {
                "item": item,
                "prompt": p,
                "ordering": o,
                "kind": parsed.kind,
                "option": parsed.option,
                "rule": parsed.rule,
                "hit": s.hits[(item, p, o)],
            }
            for (item, p, o), parsed in s.parsed.items()
        ],
    }

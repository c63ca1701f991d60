"""The tables `lexsem ask` and `lexsem score-answers` print, read from a `Run`: multiple-choice
scores (accuracy per prompt and ordering, circular accuracy, the positions chosen, the kinds of
answers; SugarCrepe++ §3.3 and App. G.1) and VQAScore accuracies per subset (with ties and the
answers below an API's top log-probabilities)."""

from __future__ import annotations

import json
from typing import Any

from lexsem.results.run import Run
from lexsem.tasks.answers import ParsedAnswer
from lexsem.tasks.catalog import get_task
from lexsem.tasks.choice import ORDERINGS, PROMPTS, ChoiceScores
from lexsem.tasks.choice_task import CHOICE_TASKS, CODES

__all__ = ["choice_markdown", "choice_record", "choice_scores", "vqa_markdown"]

_KINDS = {code: kind for kind, code in CODES.items()}


def choice_scores(run: Run) -> ChoiceScores:
    """The multiple-choice scores of the `choice_*` tasks of `run`, from its item table."""
    out = ChoiceScores()
    rows = run.items.to_pylist()
    for task in dict.fromkeys(r["task"] for r in rows):
        prompt = CHOICE_TASKS.get(task)
        if prompt is None:
            continue
        mine = [r for r in rows if r["task"] == task]
        orders = ORDERINGS[PROMPTS[prompt].n_options]
        for o in orders:
            hits = [bool(r["hit"]) for r in mine if r["metric"] == o]
            out.n[(prompt, o)] = len(hits)
            out.accuracy[(prompt, o)] = 100.0 * sum(hits) / max(1, len(hits))
            for r in mine:
                if r["metric"] == o:
                    out.hits[(f"{r['subset']}/{r['item_id']}", prompt, o)] = bool(r["hit"])
        every = [r for r in mine if r["metric"] == "circular"]
        out.n_circular[prompt] = len(every)
        out.circular[prompt] = 100.0 * sum(bool(r["hit"]) for r in every) / max(1, len(every))
        chosen = dict.fromkeys(range(1, PROMPTS[prompt].n_options + 1), 0)
        kinds: dict[str, int] = {}
        for r in every:
            for o in orders:
                value = r[f"answer_{o}"]
                option = int(value) if value >= 1 else None
                kind = "option" if option is not None else _KINDS[value]
                out.parsed[(f"{r['subset']}/{r['item_id']}", prompt, o)] = ParsedAnswer(
                    kind,  # type: ignore[arg-type]
                    option,
                    r.get(f"rule_answer_{o}") or "",
                )
                kinds[kind] = kinds.get(kind, 0) + 1
                if option is not None:
                    chosen[option] += 1
        total, n_chosen = sum(kinds.values()), sum(chosen.values())
        out.kinds[prompt] = {k: 100.0 * v / total for k, v in sorted(kinds.items())}
        out.positions[prompt] = {
            k: 100.0 * v / n_chosen if n_chosen else 0.0 for k, v in chosen.items()
        }
    return out


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


_HITS = {
    "quad": "group: I2T s(I0,C0) > s(I0,C1), s(I1,C1) > s(I1,C0) and T2I s(I0,C0) > s(I1,C0), "
    "s(I1,C1) > s(I0,C1)",
    "triplet": "ITT: s(I,P1) > s(I,N) and s(I,P2) > s(I,N)",
    "pair": "s(I,C+) > s(I,C-)",
    "multi": "the true caption above every other",
}


def _below_top_k(row: dict[str, Any]) -> int:
    n = 0
    for key, value in row.items():
        if key.startswith("detail_") and value:
            probs = json.loads(value)["probs"]
            n += sum(bool(p["below_top_k"]) for p in probs.values())
    return n


def vqa_markdown(run: Run, score: str, model: str) -> str:
    """VQAScore accuracy of each image-text task of `run` per subset (and over all items):
    the task's group hit for two-image items, its main metric otherwise."""
    lines = [
        f"VQAScore ({score}) of {model}",
        "",
        "| subset | items | accuracy (%) | ties | answers below top-k | hit |",
        "|---|---:|---:|---:|---:|---|",
    ]
    rows = run.items.to_pylist()
    for name in run.record.config.tasks:
        task = get_task(name)
        metric = "group" if "group" in task.metrics else task.metrics[0]
        mine = [r for r in rows if r["task"] == name and r["metric"] == metric]
        subsets = list(dict.fromkeys(r["subset"] for r in mine))
        for subset in [*subsets, "all"]:
            its = [r for r in mine if subset in (r["subset"], "all")]
            acc = 100.0 * sum(bool(r["hit"]) for r in its) / max(1, len(its))
            ties = sum(bool(r["tie"]) for r in its)
            below = sum(_below_top_k(r) for r in its)
            hit = _HITS.get(task.item_kind, metric) if subset != "all" else ""
            lines.append(f"| {subset} | {len(its)} | {acc:.2f} | {ties} | {below} | {hit} |")
    lines += [
        "",
        "ties are misses; an answer below top-k was not among the top log-probabilities "
        "returned: its probability is taken as 0 (logprobs=top).",
    ]
    return "\n".join(lines) + "\n"

"""The tables `lexsem ask` and `lexsem score-answers` print, read from a `Run`: multiple-choice
scores (accuracy per prompt and ordering, circular accuracy, the positions chosen, the kinds of
answers; SugarCrepe++ §3.3 and App. G.1; the accuracy by the other answer rule where the two
differ, `lexsem.tasks.answer_rules`), what a file of recorded answers covers
(`coverage_lines`), and VQAScore accuracies per subset (with ties and the answers below an
API's top log-probabilities)."""

from __future__ import annotations

import json
from typing import Any

from lexsem.results.run import Run
from lexsem.tasks.answers import ParsedAnswer
from lexsem.tasks.catalog import get_task
from lexsem.tasks.choice import ORDERINGS, PROMPTS, ChoiceScores
from lexsem.tasks.choice_task import CHOICE_TASKS, CODES

__all__ = ["choice_markdown", "choice_record", "choice_scores", "coverage_lines", "vqa_markdown"]

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
        total = _items_total(run, task)
        if total is not None:
            out.total[prompt] = total
        if run.record.config.answer_rule is not None:
            out.rule[prompt] = run.record.config.answer_rule
        _other_rule(run, task, prompt, out)
    return out


def _items_total(run: Run, task: str) -> int | None:
    """The items of the benchmark `task` was scored on (answered or not), from the run's
    per-subset results of its circular metric; None when the run records no coverage."""
    rows = [
        r
        for r in run.record.results
        if r.task == task and r.metric == "circular" and not r.subset.startswith("_")
    ]
    totals = [r.items_total for r in rows]
    if not rows or any(t is None for t in totals):
        return None
    return sum(t for t in totals if t is not None)


def _of(n: int, total: int | None) -> str:
    """`2/6`: items answered of the items of the benchmark (`2` when that is not known)."""
    return f"{n}/{total}" if total is not None else str(n)


def _other_rule(run: Run, task: str, prompt: str, out: ChoiceScores) -> None:
    """The accuracy of `task` by the other answer rule, summed over subsets
    (`RunRecord.answer_rules`)."""
    rows = [r for r in run.record.answer_rules if r.task == task]
    for metric in dict.fromkeys(r.metric for r in rows):
        mine = [r for r in rows if r.metric == metric]
        n = sum(r.n for r in mine)
        acc = 100.0 * sum(r.other_hits for r in mine) / max(1, n)
        out.other[(prompt, metric)] = (mine[0].other_rule, acc, sum(r.disagree for r in mine))


def choice_markdown(s: ChoiceScores) -> str:
    lines = ["| prompt | ordering | items | accuracy (%) |", "|---|---|---:|---:|"]
    for (prompt, ordering), acc in s.accuracy.items():
        items = _of(s.n[(prompt, ordering)], s.total.get(prompt))
        lines.append(f"| {prompt} | {ordering} | {items} | {acc:.2f} |")
    if s.other:
        lines += ["", "| prompt | metric | answer rule | accuracy (%) | other rule | accuracy (%) "
                  "| answers they disagree on |", "|---|---|---|---:|---|---:|---:|"]  # fmt: skip
        for (prompt, metric), (other, other_acc, disagree) in s.other.items():
            acc = s.accuracy.get((prompt, metric), s.circular.get(prompt, 0.0))
            lines.append(f"| {prompt} | {metric} | {s.rule.get(prompt, '')} | {acc:.2f} | "
                         f"{other} | {other_acc:.2f} | {disagree} |")  # fmt: skip
    lines += ["", "| prompt | items | circular (%) | positions chosen (%) | answers (%) |",
              "|---|---:|---:|---|---|"]  # fmt: skip
    for prompt, circ in s.circular.items():
        pos = ", ".join(f"({k}) {v:.1f}" for k, v in s.positions[prompt].items())
        kinds = ", ".join(f"{k} {v:.1f}" for k, v in s.kinds[prompt].items())
        items = _of(s.n_circular[prompt], s.total.get(prompt))
        lines.append(f"| {prompt} | {items} | {circ:.2f} | {pos} | {kinds} |")
    partial = any(s.n_circular.get(p, 0) < t for p, t in s.total.items())
    lines += [
        "",
        "items: items answered / items of the benchmark"
        + (
            " (coverage below 100%: each accuracy is over the items answered only)"
            if partial
            else ""
        )
        + "; circular: items right under every ordering they were asked in; positions: the share "
        "of parsed answers naming each position; answers: option / none / multiple / refusal "
        "/ unparseable. Prompts: "
        + "; ".join(f"{p}: {PROMPTS[p].source}" for p in s.circular)
        + ". Answers read by: "
        + "; ".join(
            f"{p}: {s.rule[p]}, {PROMPTS[p].reading(s.rule[p]).describe()}"  # type: ignore[arg-type]
            for p in s.circular
            if p in s.rule
        ),
    ]
    return "\n".join(lines) + "\n"


def choice_record(s: ChoiceScores) -> dict[str, Any]:
    """Every score and every parsed answer, as JSON."""
    return {
        "accuracy": [
            {
                "prompt": p,
                "ordering": o,
                "n": s.n[(p, o)],
                "items_total": s.total.get(p),
                "accuracy": acc,
            }
            for (p, o), acc in s.accuracy.items()
        ],
        "circular": [
            {
                "prompt": p,
                "items": s.n_circular[p],
                "items_total": s.total.get(p),
                "accuracy": acc,
            }
            for p, acc in s.circular.items()
        ],
        "positions": s.positions,
        "kinds": s.kinds,
        "answer_rule": s.rule,
        "other_rule": [
            {"prompt": p, "metric": m, "rule": other, "accuracy": acc, "disagree": disagree}
            for (p, m), (other, acc, disagree) in s.other.items()
        ],
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


def coverage_lines(run: Run, *, most: int = 10) -> list[str]:
    """What a file of recorded answers covers (`RunRecord.recorded`), one line per subset
    (`swap_obj: 245 of 245 items`) and the answers about items the benchmark lacks, named
    (at most `most` items, then how many more); none for a run of another model."""
    cov = run.record.recorded
    if cov is None:
        return []
    lines = [f"{sub}: {cov.items_answered.get(sub, 0)} of {n} items answered"
             for sub, n in cov.items_total.items()]  # fmt: skip
    if cov.unknown:
        by_item: dict[str, list[str]] = {}
        for u in cov.unknown:
            by_item.setdefault(f"{u.subset}/{u.item_id}", []).append(u.where)
        named = [f"{item} ({', '.join(where)})" for item, where in list(by_item.items())[:most]]
        more = f", and {len(by_item) - most} more" if len(by_item) > most else ""
        answers = f"{len(cov.unknown)} answer{'s' * (len(cov.unknown) != 1)}"
        items = "an item" if len(by_item) == 1 else f"{len(by_item)} items"
        lines.append(f"{cov.file}: {answers} about {items} not in the benchmark, not scored: "
                     f"{'; '.join(named)}{more}")  # fmt: skip
    return lines


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

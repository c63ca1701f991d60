"""SugarCrepe++ Table 17: yes/no per caption with five prompt paraphrases (SugarCrepe++, App.
G.1), as the report lays out runs: one row per paraphrase, `t17_1` ... `t17_5`, read from the
question in the run's model fingerprint, with the input prompt verbatim; task `yesno`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.generative_runs import base_model, question_of
from lexsem.report.paper.layout import RunLayout, RunRow, SubsetColumns, has_result
from lexsem.report.paper.tables.scpp import SUBSETS
from lexsem.results.schema import RunRecord

NAMES = dict(zip(SUBSETS, ("S. Obj", "S. Att", "R. Obj", "R. Att", "R. Rel"), strict=True))
# the table's groups of its paraphrases
GROUP = {"t17_1": "Prompt-1", "t17_2": "Prompt-1", "t17_3": "Prompt-1",
         "t17_4": "Prompt-2", "t17_5": "Prompt-2"}  # fmt: skip


def _prompt_text(question: str | None) -> str:
    from lexsem.models.vqascore import QUESTIONS

    if question is None:
        return "not recorded"
    return QUESTIONS.get(question, question).replace("{text}", "<caption>")


def _by_prompt(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The yes/no runs by model (first seen first), then preset t17_1 ... t17_5, then others."""
    models = list(dict.fromkeys(base_model(r.model) for r in runs))
    presets = list(GROUP)

    def rank(r: RunRecord) -> tuple[int, int]:
        q = question_of(r.model)
        return models.index(base_model(r.model)), presets.index(q) if q in presets else 9

    return sorted(runs, key=rank)


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    rows = []
    for r in _by_prompt([r for r in records if has_result(r, bench, "yesno", "yesno")]):
        q = question_of(r.model)
        preset = q if q in GROUP else ("not recorded" if q is None else "custom")
        lead = (preset, _prompt_text(q), GROUP.get(preset, ""), labels[r.run_id])
        rows.append(RunRow(lead, (r,), f"{preset} ({labels[r.run_id]})", "yesno", "yesno"))
    return rows


LAYOUT = RunLayout(
    cite="SugarCrepe++ Table 17",
    title="yes/no per caption, prompt paraphrases",
    lead=("prompt", "input prompt", "paraphrase of", "model"),
    columns=SubsetColumns(("yesno",), NAMES),
    rows=_rows,
    note="Each caption asked alone; a hit: yes to P1 and P2 and no to N (the paper states no rule; "
    "ours). Prompts t17_1 ... t17_5: the table's five paraphrases verbatim, grouped as the table "
    "groups them (Prompt-1: t17_1-3, Prompt-2: t17_4-5); the question is read from each run's "
    "model fingerprint.",
    per_benchmark=("yesno",),
)

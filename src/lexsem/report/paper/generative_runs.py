"""What a generative run is, read from its record (never from its spec string): its method
(VGPTScore, VQAScore, ...), its yes/no question, its number of demonstrations; and its runs
grouped by model, and a model's runs as one row of a paper's table. The paper tables of
generative runs select their rows with these."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lexsem.report.paper.layout import RunRow
from lexsem.results.schema import ModelInfo, RunRecord
from lexsem.tasks.choice_task import CHOICE_TASKS


def _backend(model: ModelInfo) -> str:
    backend = model.fingerprint.get("backend")
    return backend if isinstance(backend, str) else ""


def _option(model: ModelInfo, key: str) -> Any:
    """A model option: from the fingerprint (the resolved value; an API VQAScore run keeps its
    options under `vqascore`)."""
    fp = model.fingerprint
    nested = fp.get("vqascore")
    if isinstance(nested, dict) and nested.get(key) is not None:
        return nested[key]
    return fp.get(key)


def _is_vqascore(model: ModelInfo) -> bool:
    """The `vqa:` backend, or VQAScores from an API's log-probabilities (`ask --vqascore`)."""
    return _backend(model) == "vqa" or isinstance(model.fingerprint.get("vqascore"), dict)


def shots_of(record: RunRecord) -> int | None:
    """The demonstrations before each question: `shots` in the fingerprint; None when a
    run of recorded answers does not say (they may have been asked with any); else 0 (lexsem
    asks a model with no demonstrations)."""
    value = _option(record.model, "shots")
    try:
        if value is not None:
            return int(value)
    except (TypeError, ValueError):
        return None
    return None if _backend(record.model) == "recorded" else 0


def question_of(model: ModelInfo) -> str | None:
    """The yes/no question: a Table 17 preset's name (`t17_1`), another template's text, or
    None when the record names none."""
    from lexsem.models.vqascore import QUESTIONS

    text = _option(model, "question")
    if not isinstance(text, str):
        return None
    for name, template in QUESTIONS.items():
        if text in (name, template):
            return name
    return text


def method_of(model: ModelInfo) -> str | None:
    """`VGPTScore`, `VGPTScore Blind`, `VQAScore` (with the score and question when not the
    defaults) for the `vgpt:` and `vqa:` backends and API VQAScore runs; None for others."""
    backend = _backend(model)
    score = _option(model, "score")
    if backend == "vgpt":
        names = {"sum": "VGPTScore", "blind": "VGPTScore Blind", "mean": "VGPTScore (mean)"}
        if score == "debiased":
            return f"VGPTScore debiased (alpha {float(_option(model, 'alpha') or 1.0):g})"
        return names.get(score or "sum", f"VGPTScore ({score})")
    if _is_vqascore(model):
        name = "VQAScore" if score in (None, "vqa") else f"VQAScore ({score})"
        question = question_of(model)
        if question is not None and not _is_default_question(question):
            name += f", question {question if question.startswith('t17_') else 'custom'}"
        return name
    return None


def _is_default_question(question: str) -> bool:
    from lexsem.models.vqascore import QUESTION

    return question == QUESTION


def is_generative(record: RunRecord) -> bool:
    """A run of a generative model: multiple choice, yes/no, VQAScore or VGPTScore."""
    tasks = {r.task for r in record.results}
    return bool(tasks & (set(CHOICE_TASKS) | {"yesno"})) or method_of(record.model) is not None


def by_model(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """fingerprint key -> the VQAScore / VGPTScore runs of that model, in the given order."""
    out: dict[str, list[RunRecord]] = {}
    for r in records:
        if method_of(r.model) is not None:
            out.setdefault(r.model.fingerprint_key, []).append(r)
    return out


def base_model(model: ModelInfo) -> str:
    """The model without its question: runs differing only in the prompt are one model."""
    fp = {k: v for k, v in model.fingerprint.items() if k != "question"}
    return json.dumps(fp, sort_keys=True, default=str)


def model_row(
    runs: Sequence[RunRecord], labels: Mapping[str, str], method_first: bool = False
) -> RunRow:
    """One model's runs (`by_model`) as a row named by its label, led by its label and its
    method (the method first where `method_first`)."""
    name = labels[runs[0].run_id]
    method = method_of(runs[0].model) or ""
    return RunRow((method, name) if method_first else (name, method), tuple(runs), name)

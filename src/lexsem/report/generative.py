"""Reports of generative-model runs: the papers' tables of them, and their position bias.

Paper-style tables (`paper_tables`), each laid out as the paper's (its rows, its column names
and order), with our runs as rows and the accuracies shown as in the other report tables
(`60.00`, the coverage when items were not scored, the interval with `ci`):

- SugarCrepe++ Table 8 (§3.3, multiple choice): one row per model × Prompt 1-3 (tasks
  `choice_scpp1` ... `choice_scpp3`), the subsets as columns. The paper's prompts list N first
  and count a hit when the answer is (1): the accuracy under the ordering NPP. Runs whose
  record says they were asked with demonstrations are left to Table 14.
- SugarCrepe++ Table 14 (App. E.4, few-shot, Prompt 3): one row per `choice_scpp3` run with its
  number of demonstrations — `shots` in the run's model fingerprint; a run of recorded
  answers that keeps none, so its row says "not recorded" and is known by its run name. Shown when
  some run is, or may be, a k-shot run.
- SugarCrepe++ Table 17 (App. G.1, yes/no per caption): one row per prompt paraphrase,
  `t17_1` ... `t17_5`, read from the question in the run's model fingerprint, with the input
  prompt verbatim; task `yesno`, main metric.
- SugarCrepe++ Table 18 (App. G.1, option orderings): one row per ordering of a
  `choice_scpp_order` run (N, P1, P2 = NPP; P1, N, P2 = PNP; P1, P2, N = PPN).
- SugarCrepe++ Table 19 (App. G.2): ITT of VGPTScore, VGPTScore Blind and VQAScore runs (the
  `vgpt:` and `vqa:` backends) per subset of SugarCrepe (task `pair`) and SugarCrepe++ (task
  `itt`), in the table's column order, each with its Avg (the mean of the five subsets); rows
  grouped by method, then model (a model's runs on the two benchmarks make one row).
- BiVLC Table 2, generative rows: SugarCrepe accuracy (all items pooled) and BiVLC I2T, T2I and
  Group of each VQAScore / VGPTScore run, under the table's Random row.

No published number is put beside ours: the numbers the project reproduces to the decimal are
of other tables. The one row from a paper is BiVLC Table 2's Random row: chance, by definition.

Position bias (`position_bias`, `generative_sections`; needs the per-item answers, so only in
the HTML report): for each multiple-choice run and prompt, per ordering, the share of the
answers naming an option that name each position, and the share of all answers naming no
single option (none, multiple, refusal, unparseable), as a table and a figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.report.html import Section
from lexsem.report.labels import run_labels
from lexsem.report.tables import Table, _cell, label, subset_order, unique_runs
from lexsem.results.same_data import comparable_groups
from lexsem.results.schema import MetricResult, ModelInfo, RunRecord
from lexsem.stats.bootstrap import MACRO, MICRO
from lexsem.tasks.choice import ORDERINGS, PROMPTS
from lexsem.tasks.choice_task import CHOICE_TASKS, CODES, expected_option

__all__ = [
    "OrderingShares",
    "PositionBias",
    "generative_sections",
    "is_generative",
    "method_of",
    "paper_tables",
    "position_bias",
    "question_of",
    "shots_of",
]

# the papers' column names of the SugarCrepe++ subsets, per table, in the tables' order
SCPP_ORDER = ("swap_obj", "swap_att", "replace_obj", "replace_att", "replace_rel")
T8_NAMES = {
    "swap_obj": "Swap Object",
    "swap_att": "Swap Attribute",
    "replace_obj": "Replace Object",
    "replace_att": "Replace Attribute",
    "replace_rel": "Replace Relation",
}
T17_NAMES = dict(zip(SCPP_ORDER, ("S. Obj", "S. Att", "R. Obj", "R. Att", "R. Rel"), strict=True))
T18_NAMES = dict(
    zip(
        SCPP_ORDER,
        ("Swap Obj", "Swap Att", "Replace Obj", "Replace Att", "Replace Rel"),
        strict=True,
    )
)
T19_ORDER = ("swap_obj", "replace_att", "replace_obj", "replace_rel", "swap_att")
PROMPT_NAMES = {"choice_scpp1": "Prompt-1", "choice_scpp2": "Prompt-2", "choice_scpp3": "Prompt-3"}
ORDER_NAMES = {
    "NPP": "Negative, Positive 1, Positive 2 (NPP)",
    "PNP": "Positive 1, Negative, Positive 2 (PNP)",
    "PPN": "Positive 1, Positive 2, Negative (PPN)",
}
T17_GROUP = {"t17_1": "Prompt-1", "t17_2": "Prompt-1", "t17_3": "Prompt-1",
             "t17_4": "Prompt-2", "t17_5": "Prompt-2"}  # fmt: skip
# BiVLC Table 2's Random row: SugarCrepe (a pair: 50), I2T, T2I, Group (BiVLC §4)
RANDOM = ("50.00", "25.00", "25.00", "16.67")
_BENCH_NAMES = {"sugarcrepe": "SugarCrepe", "sugarcrepe_pp": "SugarCrepe++"}
_COVERAGE = (
    "(scored/total): not every item was scored (skipped, left out, or no answer recorded); the "
    "accuracy is over the scored items only (run.json: skipped, dropped, notices)"
)
_KINDS = {v: k for k, v in CODES.items()}  # code -> none / multiple / refusal / unparseable
_T8_NOTE = (
    "Accuracy (%) = hits / (hits + misses) under the paper's ordering, N listed first (NPP): a "
    "hit when the answer is (1); an answer naming no single option is a miss. Prompts verbatim "
    "from SugarCrepe++ §3.3; the paper's Human row is not reproduced."
)
_T14_NOTE = (
    "Prompt 3, ordering NPP; shots: the demonstrations before each question (`shots` in the "
    "run's model fingerprint). A run of recorded answers that does not record them: 'not "
    "recorded', known by its run name."
)
_T17_NOTE = (
    "Each caption asked alone; a hit: yes to P1 and P2 and no to N (the paper states no rule; "
    "ours). Prompts t17_1 ... t17_5: the table's five paraphrases verbatim, grouped as the "
    "table groups them (Prompt-1: t17_1-3, Prompt-2: t17_4-5); the question is read from each "
    "run's model fingerprint."
)
_T18_NOTE = (
    "The prompt of SugarCrepe++ App. G.1 (Figure 7) with the captions in each order; a hit when "
    "the answer names the negative's position."
)


# -- what a run is ------------------------------------------------------------------------------


def _backend(model: ModelInfo) -> str:
    backend = model.fingerprint.get("backend")
    return backend if isinstance(backend, str) else ""


def _option(model: ModelInfo, key: str) -> Any:
    """A model option: from the fingerprint (the resolved value; an API VQAScore run keeps its
    options under `vqascore`). What a run was is read from its record, never from its spec
    string."""
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


def _records(runs: Iterable[Any]) -> list[RunRecord]:
    return unique_runs([getattr(r, "record", r) for r in runs])  # a `Run` or its record


def _index(record: RunRecord) -> dict[tuple[str, str, str, str], MetricResult]:
    return {(r.benchmark, r.task, r.metric, r.subset): r for r in record.results}


def _has(record: RunRecord, bench: str, task: str, metric: str) -> bool:
    return any(k[:3] == (bench, task, metric) for k in _index(record))


def _benches(records: Sequence[RunRecord], task: str) -> list[str]:
    return list(dict.fromkeys(r.benchmark for rec in records for r in rec.results
                              if r.task == task))  # fmt: skip


def _subsets(records: Sequence[RunRecord], bench: str, tasks: Iterable[str],
             order: Sequence[str] = SCPP_ORDER) -> list[str]:  # fmt: skip
    """The plain subsets of (bench, tasks) in the runs: the paper's first, in its order."""
    want = set(tasks)
    found = list(dict.fromkeys(r.subset for rec in records for r in rec.results
                               if r.benchmark == bench and r.task in want
                               and not r.subset.startswith("_")))  # fmt: skip
    return [s for s in order if s in found] + subset_order(
        bench, [s for s in found if s not in order]
    )


# -- filling a table ---------------------------------------------------------------------------


@dataclass
class _Row:
    """A row: its text cells, then one cell per (run, benchmark, task, metric, subset);
    `name` says which row it is in the notes."""

    lead: list[str]
    cells: list[tuple[RunRecord, str, str, str, str]]
    name: str


def _fill(title: str, headers: list[str], rows: Sequence[_Row], ci: bool) -> Table:
    t = Table(title, headers)
    ties: dict[str, tuple[int, str]] = {}
    partial = False
    for row in rows:
        values = []
        for cell in row.cells:
            r = _index(cell[0]).get(cell[1:])
            values.append(_cell(r, ci))
            if r is not None:
                partial = partial or not r.complete
                if not r.subset.startswith("_") and r.ties:
                    n, _ = ties.get(row.name, (0, ""))
                    ties[row.name] = (n + r.ties, cell[0].config.tie_policy)
        t.rows.append([*row.lead, *values])
    if ties:
        parts = ", ".join(
            f"{lab} {n} (as {'hits' if pol == 'lenient' else 'failures'})"
            for lab, (n, pol) in ties.items()
        )
        t.notes.append(f"tied comparisons per row: {parts}")
    if partial:
        t.notes.append(_COVERAGE)
    return t


def _names(records: Sequence[RunRecord]) -> dict[str, str]:
    """run id -> its label (`lexsem.report.labels.run_labels`)."""
    return run_labels(records)


# -- SugarCrepe++ Tables 8, 14, 17, 18 -------------------------------------------------------


def table8(records: Sequence[RunRecord], ci: bool = False) -> list[Table]:
    """SugarCrepe++ Table 8: Prompts 1-3, ordering NPP, one row per model × prompt."""
    names, out = _names(records), []
    tasks = list(PROMPT_NAMES)
    for bench in dict.fromkeys(b for t in tasks for b in _benches(records, t)):
        subsets = _subsets(records, bench, tasks)
        rows = [
            _Row([names[rec.run_id], PROMPT_NAMES[task]],
                 [(rec, bench, task, "NPP", s) for s in subsets],
                 f"{names[rec.run_id]} {PROMPT_NAMES[task]}")
            for rec in records if shots_of(rec) in (0, None)
            for task in tasks if _has(rec, bench, task, "NPP")
        ]  # fmt: skip
        if not rows:
            continue
        heads = ["model", "prompt", *(T8_NAMES.get(s, label(s)) for s in subsets)]
        t = _fill(f"{bench} — multiple choice, Prompts 1-3 (SugarCrepe++ Table 8)", heads, rows, ci)
        t.notes.insert(0, _T8_NOTE)
        out.append(t)
    return out


def _shots_label(shots: int | None) -> str:
    if shots is None:
        return "not recorded"
    return "Zero-shot" if shots == 0 else f"{shots}-shot"


def table14(records: Sequence[RunRecord], ci: bool = False) -> list[Table]:
    """SugarCrepe++ Table 14: Prompt 3 with demonstrations, one row per run (zero-shot first)."""
    names, out, task = _names(records), [], "choice_scpp3"
    for bench in _benches(records, task):
        subsets = _subsets(records, bench, [task])
        runs = [r for r in records if _has(r, bench, task, "NPP")]
        if all(shots_of(r) == 0 for r in runs):
            continue
        runs.sort(key=lambda r: (shots_of(r) is None, shots_of(r) or 0))
        rows = [_Row([names[r.run_id], _shots_label(shots_of(r))],
                     [(r, bench, task, "NPP", s) for s in subsets], names[r.run_id])
                for r in runs]  # fmt: skip
        heads = ["model", "shots", *(T8_NAMES.get(s, label(s)) for s in subsets)]
        t = _fill(f"{bench} — few-shot, Prompt 3 (SugarCrepe++ Table 14)", heads, rows, ci)
        t.notes.insert(0, _T14_NOTE)
        out.append(t)
    return out


def _prompt_text(question: str | None) -> str:
    from lexsem.models.vqascore import QUESTIONS

    if question is None:
        return "not recorded"
    return QUESTIONS.get(question, question).replace("{text}", "<caption>")


def table17(records: Sequence[RunRecord], ci: bool = False) -> list[Table]:
    """SugarCrepe++ Table 17: one row per prompt paraphrase (per model), metric `yesno`."""
    names, out = _names(records), []
    presets = list(T17_GROUP)
    for bench in _benches(records, "yesno"):
        subsets = _subsets(records, bench, ["yesno"])
        runs = [r for r in records if _has(r, bench, "yesno", "yesno")]
        rows = []
        for r in _by_prompt(runs):
            q = question_of(r.model)
            preset = q if q in presets else ("not recorded" if q is None else "custom")
            rows.append(_Row([preset, _prompt_text(q), T17_GROUP.get(preset, ""),
                              names[r.run_id]],
                             [(r, bench, "yesno", "yesno", s) for s in subsets],
                             f"{preset} ({names[r.run_id]})"))  # fmt: skip
        heads = ["prompt", "input prompt", "paraphrase of", "model",
                 *(T17_NAMES.get(s, label(s)) for s in subsets)]  # fmt: skip
        t = _fill(f"{bench} — yes/no per caption, prompt paraphrases (SugarCrepe++ Table 17)",
                  heads, rows, ci)  # fmt: skip
        t.notes.insert(0, _T17_NOTE)
        out.append(t)
    return out


def _by_prompt(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The yes/no runs by model (first seen first), then preset t17_1 ... t17_5, then others."""
    models = list(dict.fromkeys(_base_model(r.model) for r in runs))
    presets = list(T17_GROUP)

    def rank(r: RunRecord) -> tuple[int, int]:
        q = question_of(r.model)
        return models.index(_base_model(r.model)), presets.index(q) if q in presets else 9

    return sorted(runs, key=rank)


def _base_model(model: ModelInfo) -> str:
    """The model without its question: runs differing only in the prompt are one model."""
    import json

    fp = {k: v for k, v in model.fingerprint.items() if k != "question"}
    return json.dumps(fp, sort_keys=True, default=str)


def table18(records: Sequence[RunRecord], ci: bool = False) -> list[Table]:
    """SugarCrepe++ Table 18: one row per ordering of each `choice_scpp_order` run."""
    names, out, task = _names(records), [], "choice_scpp_order"
    for bench in _benches(records, task):
        subsets = _subsets(records, bench, [task])
        rows = [
            _Row([names[r.run_id], ORDER_NAMES[o]], [(r, bench, task, o, s) for s in subsets],
                 f"{names[r.run_id]} {o}")
            for r in records for o in ORDER_NAMES if _has(r, bench, task, o)
        ]  # fmt: skip
        heads = ["model", "ordering", *(T18_NAMES.get(s, label(s)) for s in subsets)]
        t = _fill(f"{bench} — option orderings (SugarCrepe++ Table 18)", heads, rows, ci)
        t.notes.insert(0, _T18_NOTE)
        out.append(t)
    return out


# -- SugarCrepe++ Table 19 and BiVLC Table 2 ---------------------------------------------------


def _method_rank(method: str) -> int:
    for k, prefix in enumerate(("VGPTScore Blind", "VGPTScore", "VQAScore")):
        if method.startswith(prefix):
            return (1, 0, 2)[k]
    return 3


def _by_model(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """fingerprint key -> the VQAScore / VGPTScore runs of that model, in the given order."""
    out: dict[str, list[RunRecord]] = {}
    for r in records:
        if method_of(r.model) is not None:
            out.setdefault(r.model.fingerprint_key, []).append(r)
    return out


_Where = tuple[RunRecord, str, str, str, str]  # (run, benchmark, task, metric, subset)


def _find(
    runs: Sequence[RunRecord], bench: str, task: str, metric: str, subset: str
) -> _Where | None:
    """(run, benchmark, task, metric, subset) of the first run with that result, else None."""
    for r in runs:
        if (bench, task, metric, subset) in _index(r):
            return (r, bench, task, metric, subset)
    return None


def _avg(runs: Sequence[RunRecord], bench: str, task: str, metric: str,
         subsets: Sequence[str]) -> tuple[str, _Where | None]:  # fmt: skip
    """Avg of a row's subsets: the run's macro average (with its interval) when its subsets
    are exactly these, else their mean, else blank (a subset missing)."""
    for r in runs:
        own = {k[3] for k in _index(r) if k[:3] == (bench, task, metric) and k[3][0] != "_"}
        if own == set(subsets) and (bench, task, metric, MACRO) in _index(r):
            return "", (r, bench, task, metric, MACRO)
    cells = [_find(runs, bench, task, metric, s) for s in subsets]
    if not subsets or any(c is None for c in cells):
        return "", None
    values = [_index(c[0])[c[1:]].accuracy for c in cells if c is not None]
    return f"{sum(values) / len(values):.2f}", None


def table19(records: Sequence[RunRecord], ci: bool = False) -> list[Table]:
    """SugarCrepe++ Table 19: ITT per subset of SugarCrepe (`pair`) and SugarCrepe++ (`itt`)
    of VGPTScore / VGPTScore Blind / VQAScore runs, one row per method and model."""
    models = _by_model(records)
    gen = [r for runs in models.values() for r in runs]
    groups = [(b, "pair", "acc") for b in _benches(gen, "pair")]
    groups += [(b, "itt", "itt") for b in _benches(gen, "itt")]
    if not groups:
        return []
    names = _names(records)
    heads, columns = ["method", "model"], []
    for bench, task, metric in groups:
        subsets = _subsets(gen, bench, [task], T19_ORDER)
        if any(s in T19_ORDER for s in subsets):  # as the paper: its five subsets only
            subsets = [s for s in subsets if s in T19_ORDER]
        shown = _BENCH_NAMES.get(bench, bench)
        heads += [f"{shown} {T8_NAMES.get(s, label(s))}" for s in subsets] + [f"{shown} Avg"]
        columns.append((bench, task, metric, subsets))
    keyed = sorted(models.values(), key=lambda rs: _method_rank(method_of(rs[0].model) or ""))
    t = Table("Generative VLMs, ITT per subset (SugarCrepe++ Table 19)", heads)
    for runs in keyed:
        lead = [method_of(runs[0].model) or "", names[runs[0].run_id]]
        cells = []
        for bench, task, metric, subsets in columns:
            cells += [_cell(_res(_find(runs, bench, task, metric, s)), ci) for s in subsets]
            text, macro = _avg(runs, bench, task, metric, subsets)
            cells.append(_cell(_res(macro), ci) if macro is not None else text)
        if any(cells):
            t.rows.append([*lead, *cells])
    t.notes.append(
        "ITT accuracy (%): SugarCrepe, the positive scored above the negative; SugarCrepe++, "
        "both positives above the negative. Columns in the table's order (its five subsets; "
        "SugarCrepe's add subsets are not in it); Avg: the mean of the row's subsets (the run's "
        "macro average, with its interval, when it has exactly these). Methods: the vgpt: "
        "backend's score=sum (VGPTScore) and blind (VGPTScore Blind, Gaussian-noise images), "
        "the vqa: backend (VQAScore)."
    )
    return [t] if t.rows else []


def _res(cell: _Where | None) -> MetricResult | None:
    return None if cell is None else _index(cell[0]).get(cell[1:])


def _overall(runs: Sequence[RunRecord], bench: str, task: str, metric: str) -> MetricResult | None:
    for r in runs:
        try:
            return r.result(bench, metric, MICRO, task)
        except KeyError:
            continue
    return None


def bivlc_table2(records: Sequence[RunRecord], ci: bool = False) -> list[Table]:
    """BiVLC Table 2, generative rows: SugarCrepe, I2T, T2I, Group per VQAScore / VGPTScore
    model, under the table's Random row."""
    models = _by_model(records)
    gen = [r for runs in models.values() for r in runs]
    pairs = _benches(gen, "pair")
    sc = "sugarcrepe" if "sugarcrepe" in pairs else (pairs[0] if pairs else None)
    names, out = _names(records), []
    for bench in _benches(gen, "bivlc"):
        sc_head = _BENCH_NAMES.get(sc, sc) if sc else "SugarCrepe"
        t = Table(f"{bench} — generative models (BiVLC Table 2)",
                  ["model", "method", sc_head, "I2T", "T2I", "Group"])  # fmt: skip
        t.rows.append(["Random", "chance", *RANDOM])
        for runs in models.values():
            if _overall(runs, bench, "bivlc", "group") is None:
                continue
            sc_cell = _cell(_overall(runs, sc, "pair", "acc"), ci) if sc else ""
            main = [_cell(_overall(runs, bench, "bivlc", m), ci) for m in ("i2t", "t2i", "group")]
            t.rows.append([names[runs[0].run_id], method_of(runs[0].model) or "", sc_cell, *main])
        t.notes.append(
            f"BiVLC I2T, T2I, Group on all items; {sc_head}: the same model's accuracy on all "
            "its items pooled (the paper does not say which average). Random: chance, as in "
            "the table; its Human row and parameter counts are not reproduced."
        )
        out.append(t)
    return out


def paper_tables(runs: Iterable[Any], *, ci: bool = False) -> list[Table]:
    """The paper-style tables of the generative runs among `runs` (`Run`s or records); none
    when there is no generative run."""
    records = [r for r in _records(runs) if is_generative(r)]
    if not records:
        return []
    builders = (table8, table14, table17, table18, table19, bivlc_table2)
    benches = list(dict.fromkeys(res.benchmark for r in records for res in r.results))
    parts, why = comparable_groups(records, benches)
    if len(parts) == 1:
        return [t for build in builders for t in build(records, ci)]
    # runs that read different data of a benchmark are never rows of one table
    note = f"[data k of {len(parts)}]: runs that read different data are shown apart: " + "; ".join(
        why
    )
    out: list[Table] = []
    for k, part in enumerate(parts, 1):
        for t in (t for build in builders for t in build(part, ci)):
            t.title += f" [data {k} of {len(parts)}]"
            t.notes.append(note)
            out.append(t)
    return out


# -- position bias -----------------------------------------------------------------------------


@dataclass
class OrderingShares:
    """The answers under one ordering (or `all` of them pooled): how many, the share (%) of
    those naming an option that name each position, and the share (%) of all answers of each
    kind (`option`, `none`, `multiple`, `refusal`, `unparseable`)."""

    ordering: str
    right: int | None  # the right option (1-based); None for the pooled row
    answers: int
    positions: dict[int, float]
    kinds: dict[str, float]


@dataclass
class PositionBias:
    model: str
    benchmark: str
    task: str
    rows: list[OrderingShares]


def _shares(ordering: str, right: int | None, values: np.ndarray, n_options: int) -> OrderingShares:
    values = values[np.isfinite(values)]
    n = len(values)
    named = values[values >= 1]
    positions = {
        k: 100.0 * float(np.sum(named == k)) / len(named) if len(named) else 0.0
        for k in range(1, n_options + 1)
    }
    kinds = {"option": 100.0 * len(named) / n if n else 0.0}
    for code, kind in sorted(_KINDS.items(), reverse=True):
        kinds[kind] = 100.0 * float(np.sum(values == code)) / n if n else 0.0
    return OrderingShares(ordering, right, n, positions, kinds)


def position_bias(run: Any, name: str | None = None) -> list[PositionBias]:
    """The position bias of each (benchmark, multiple-choice task) of a `Run`, read from its
    per-item answers (one row per item: the answers repeat on every metric's row); shown under
    `name` (default: the model's name)."""
    record = run.record
    tasks = [t for t in dict.fromkeys(r.task for r in record.results) if t in CHOICE_TASKS]
    if not tasks:
        return []
    df = run.items.to_pandas()
    out = []
    chosen = df[df["task"].isin(tasks)]
    for (bench, task), part in chosen.groupby(["benchmark", "task"], sort=False):
        prompt = PROMPTS[CHOICE_TASKS[task]]
        one = part[part["metric"] == part["metric"].iloc[0]]
        orders = [o for o in ORDERINGS[prompt.n_options] if f"answer_{o}" in one]
        cols = {o: one[f"answer_{o}"].to_numpy(dtype=float) for o in orders}
        rows = [_shares(o, expected_option(prompt, o), cols[o], prompt.n_options) for o in orders]
        if len(orders) > 1:
            pooled = np.concatenate([cols[o] for o in orders])
            rows.append(_shares("all", None, pooled, prompt.n_options))
        out.append(PositionBias(name or record.model.name, str(bench), str(task), rows))
    return out


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.1f}"


def bias_table(bias: PositionBias) -> Table:
    n_opt = len(bias.rows[0].positions) if bias.rows else 0
    kinds = ["none", "multiple", "refusal", "unparseable"]
    t = Table(
        f"{bias.model} — {bias.benchmark}, {bias.task}: positions named (%)",
        ["ordering", "right option", "answers", *(f"({k})" for k in range(1, n_opt + 1)),
         "no single option", *kinds],
    )  # fmt: skip
    for row in bias.rows:
        t.rows.append(
            [row.ordering, "" if row.right is None else f"({row.right})", str(row.answers),
             *(_pct(row.positions[k]) for k in range(1, n_opt + 1)),
             _pct(100.0 - row.kinds["option"] if row.answers else 0.0),
             *(_pct(row.kinds[k]) for k in kinds)]
        )  # fmt: skip
    t.notes.append(
        "(1), (2), (3): the share of the answers naming an option that name that position (a "
        "model without preference: equal shares); no single option and its kinds: the share "
        "of all answers (lexsem.tasks.answers reads each answer)."
    )
    return t


def bias_figure(bias: PositionBias) -> tuple[str, bytes]:
    from lexsem.report.plots import position_bias_bars

    n_opt = len(bias.rows[0].positions) if bias.rows else 0
    kinds = ["none", "multiple", "refusal", "unparseable"]
    png = position_bias_bars(
        [r.ordering for r in bias.rows],
        [[r.positions[k] for k in range(1, n_opt + 1)] for r in bias.rows],
        {k: [r.kinds[k] for r in bias.rows] for k in kinds},
        f"{bias.model} — {bias.benchmark}, {bias.task}: position bias",
        right=[r.right for r in bias.rows],
    )
    caption = (
        f"Position bias of {bias.model} ({bias.task} on {bias.benchmark}): left, per ordering, "
        "the share of the answers naming an option that name each position (outlined: the "
        "right option; dashed: equal shares); right, the share of all answers naming no single "
        "option, by kind."
    )
    return caption, png


def _plots_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def generative_sections(runs: Sequence[Any], *, ci: bool = True) -> list[Section]:
    """The HTML report's "Generative models" section (paper tables, position bias); none when
    no run is generative."""
    tables = paper_tables(runs, ci=ci)
    names = run_labels([getattr(r, "record", r) for r in runs])
    biases = [b for run in unique_by_id(runs) for b in position_bias(run, names[run.record.run_id])]
    if not tables and not biases:
        return []
    sec = Section(
        "Generative models",
        "Runs of generative models laid out as the papers' tables (SugarCrepe++ Tables 8, 14, "
        "17, 18, 19; BiVLC Table 2), and the position bias of the multiple-choice runs.",
    )
    if tables:
        sec.subsections.append(Section("Paper tables", tables=tables))
    if biases:
        sec.subsections.append(_bias_section(biases))
    return [sec]


def _bias_section(biases: Sequence[PositionBias]) -> Section:
    plots = _plots_available()
    sec = Section(
        "Position bias",
        "Which option position each multiple-choice run names, per ordering of the options "
        "(SugarCrepe++ App. G.1 reorders them): a model that prefers a position scores high "
        "where the right option stands there and low elsewhere."
        + ("" if plots else "\n\nFigures need matplotlib: pip install 'lexsem[web]'."),
    )
    for bias in biases:
        sub = Section(f"{bias.model} — {bias.benchmark}, {bias.task}", tables=[bias_table(bias)])
        if plots:
            sub.figures.append(bias_figure(bias))
        sec.subsections.append(sub)
    return sec


def unique_by_id(runs: Sequence[Any]) -> list[Any]:
    """`Run`s with items (records alone have none), each run id once."""
    seen: set[str] = set()
    out = []
    for r in runs:
        rid = getattr(r, "record", r).run_id
        if hasattr(r, "items") and rid not in seen:
            seen.add(rid)
            out.append(r)
    return out

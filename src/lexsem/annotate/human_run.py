"""A human study's answers as a run: the thin adapter from a study's answers table to a model
of people's votes (`lexsem.models.item_votes.ItemVotes`, spec ``human:STUDY``, model name
"human"), which `Evaluator.run` scores by the people's reading of the benchmark's own tasks
(`lexsem.tasks.voted`) and writes as a normal run folder (run.json, items.parquet), so that
`lexsem report` (text and ``--html``), `lexsem compare` (McNemar) and the paper-style tables
show the human row beside the models (docs/human-studies.md, "The human run").

Task kinds → the benchmark's tasks:

- ``tot`` → ``tot`` (``t2t`` on VISLA), ``itt`` → ``itt`` (``i2t``), ``pair`` → ``pair``:
  the item's question, whose hit is the task's main metric (the annotator choosing the right
  option: SugarCrepe++ §3, "Human evaluation ... was asked to select the negative caption";
  the SugarCrepe pair question).
- ``bivlc_i2t`` / ``bivlc_t2i`` → ``bivlc`` (``winoground``): the query of image k (item id
  ``ID#imagek``) is the comparison Ipos2T (k = 0) / Ineg2T (k = 1), the query of caption k
  (``ID#captionk``) Tpos2I / Tneg2I; the task makes I2T, T2I and Group from them as from a
  model's comparisons (BiVLC §4 and App. D; Table 2: 90.40 / 93.00 / 86.80).
- ``best_of_k``, ``ambiguity``, ``validate``: construction steps, not accuracy: left out of
  the run (counted in `HumanRun.left_out`; `lexsem.annotate.fold_back` and the agreement
  statistics read them).

Several annotators of one query are its votes: its hit is their majority (more than half
right; an even split a tie, a failure under the ``strict`` tie policy and a hit under
``lenient``, as a tie between scores is for a model; `lexsem.tasks.voted`). With one annotator
per item (SugarCrepe++'s and BiVLC's designs) the run's accuracy is the papers' accuracy. The
accuracy over every answer (each annotator's answer counted once, the papers' "average human
performance" when items overlap) is `HumanRun.answer_level`.

Each accuracy's interval is the Wilson score interval of the proportion (`lexsem.stats.wilson`;
the macro average has none), not the percentile bootstrap, which is a point ([100, 100]) for a
few items all right.

Practice answers are left out; gold (attention) items are left out of the run and reported
apart (`HumanRun.gold`); "skip" is no answer. An answer about an item the benchmark selection
lacks is left out and named in the run's coverage (`RunRecord.recorded`), as `recorded:`
answers are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from lexsem.benchmarks.load import LoadedBenchmark
from lexsem.config import EvalConfig
from lexsem.errors import DataError, LexsemError
from lexsem.evaluator import Evaluator
from lexsem.models.item_votes import ItemVotes, Vote
from lexsem.results.answers_table import check_columns, read_answers
from lexsem.results.run import Run
from lexsem.results.run_folder import check_out_dir
from lexsem.stats.bootstrap import wilson_intervals
from lexsem.tasks.catalog import get_task
from lexsem.tasks.quad import INEG2T, IPOS2T, TNEG2I, TPOS2I
from lexsem.tasks.voted import queries

__all__ = ["HUMAN", "RUN_KINDS", "AnswerAccuracy", "HumanRun", "human_run"]

HUMAN = "human"
SKIP = "skip"
NEED = ("study", "kind", "item_id", "subset", "benchmark", "annotator", "practice", "gold",
        "answer", "correct")  # fmt: skip
# kind -> the task names it stands for, in order of preference (the benchmark has one of them)
RUN_KINDS: dict[str, tuple[str, ...]] = {
    "tot": ("tot", "t2t"),
    "itt": ("itt", "i2t"),
    "pair": ("pair",),
    "bivlc_i2t": ("bivlc", "winoground"),
    "bivlc_t2i": ("bivlc", "winoground"),
}
QUERIES = {"bivlc_i2t": ("image0", "image1"), "bivlc_t2i": ("caption0", "caption1")}
# a BiVLC query of the study -> the directional comparison it is (App. D)
STUDY_QUERY = {"image0": IPOS2T, "image1": INEG2T, "caption0": TPOS2I, "caption1": TNEG2I}


@dataclass(frozen=True)
class AnswerAccuracy:
    """Accuracy over answers (each annotator's answer once) of one kind and subset."""

    kind: str
    subset: str  # a subset, "_all", or "_gold" (the gold items)
    answers: int
    right: int
    annotators: int

    @property
    def accuracy(self) -> float:
        return 100.0 * self.right / self.answers if self.answers else float("nan")


@dataclass
class HumanRun:
    run: Run
    answer_level: list[AnswerAccuracy]
    gold: list[AnswerAccuracy]
    left_out: dict[str, int] = field(default_factory=dict)  # kind -> answers not in the run
    skipped: int = 0  # "skip" answers
    unknown: int = 0  # answers about items the selection lacks


@dataclass
class _Answer:
    row: int
    kind: str
    subset: str
    base: str  # the benchmark item id
    query: str | None  # BiVLC: image0 / image1 / caption0 / caption1
    annotator: str
    correct: bool


def _parse(rows: list[dict[str, Any]], where: str) -> tuple[list[_Answer], dict[str, int], int]:
    answers: list[_Answer] = []
    left_out: dict[str, int] = {}
    skipped = 0
    seen: set[tuple[str, str, str, str]] = set()
    for n, r in enumerate(rows, 1):
        if r["practice"] or r["gold"]:
            continue
        key = (str(r["kind"]), str(r["subset"]), str(r["item_id"]), str(r["annotator"]))
        if key in seen:
            raise DataError(
                f"row {n}: annotator {key[3]} answered {key[0]} item {key[1]}/{key[2]} twice",
                file=where,
            )
        seen.add(key)
        kind = r["kind"]
        if kind not in RUN_KINDS:
            left_out[kind] = left_out.get(kind, 0) + 1
            continue
        if r["answer"] == SKIP:
            skipped += 1
            continue
        if r["correct"] is None:
            raise DataError(f"row {n}: a {kind} answer without `correct`", file=where)
        base, query = str(r["item_id"]), None
        if kind in QUERIES:
            base, _, query = base.rpartition("#")
            if query not in QUERIES[kind]:
                raise DataError(
                    f"row {n}: a {kind} item id is ITEM#{' or ITEM#'.join(QUERIES[kind])}, "
                    f"not {r['item_id']!r}",
                    file=where,
                )
        answers.append(_Answer(n, kind, str(r["subset"]), base, query, str(r["annotator"]),
                               bool(r["correct"])))  # fmt: skip
    return answers, left_out, skipped


def _accuracies(entries: list[tuple[str, str, str, bool]], gold: bool) -> list[AnswerAccuracy]:
    """Accuracy over answers, per kind and subset (and `_all`, over several subsets; `_gold`
    for the gold items), from (kind, subset, annotator, correct) entries."""
    groups: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for kind, sub, who, right in entries:
        for s in ["_gold"] if gold else [sub, "_all"]:
            groups.setdefault((kind, s), []).append((who, right))
    out = []
    for (kind, sub), rs in groups.items():
        if sub == "_all" and len([k for k, _ in groups if k == kind]) <= 2:
            continue  # one subset: its row is the whole
        out.append(AnswerAccuracy(kind, sub, len(rs), sum(r for _, r in rs),
                                  len({w for w, _ in rs})))  # fmt: skip
    kinds = list(RUN_KINDS)
    return sorted(out, key=lambda a: (kinds.index(a.kind), a.subset.startswith("_"), a.subset))


def _gold_entries(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, bool]]:
    return [
        (r["kind"], str(r["subset"]), str(r["annotator"]), bool(r["correct"]))
        for r in rows
        if r["gold"]
        and not r["practice"]
        and r["answer"] != SKIP
        and r["kind"] in RUN_KINDS
        and r["correct"] is not None
    ]


def _task(bench: LoadedBenchmark, kind: str) -> str:
    for name in RUN_KINDS[kind]:
        if name in bench.spec.tasks:
            return name
    raise LexsemError(
        f"benchmark {bench.spec.name!r} has no task for {kind} answers (it has "
        f"{', '.join(bench.spec.tasks)}; {kind} stands for {' or '.join(RUN_KINDS[kind])})"
    )


def _votes(answers: list[_Answer], bench: LoadedBenchmark) -> list[Vote]:
    """The answers about `bench` as votes: one per query of an item (its annotators'
    answers together), under the task and query names of `lexsem.tasks.voted`."""
    by: dict[tuple[str, str, str, str], list[_Answer]] = {}
    for a in answers:
        task = _task(bench, a.kind)
        query = STUDY_QUERY[a.query] if a.query else queries(get_task(task))[0]
        by.setdefault((task, query, a.subset, a.base), []).append(a)
    name = bench.spec.name
    return [
        Vote(name, *key, answers=len(got), right=sum(a.correct for a in got),
             where=tuple(f"row {a.row}" for a in got))
        for key, got in by.items()
    ]  # fmt: skip


def human_run(
    source: str | Path | pa.Table,
    *,
    study: str | None = None,
    name: str | None = None,
    out: str | Path | None = None,
    force: bool = False,
    strict_items: bool = False,
    **config: Any,
) -> HumanRun:
    """The run of a study's answers (see the module doc); `config`: fields of `EvalConfig`
    (seed, n_boot, confidence, tie_policy, data_dir, cache_dir, offline); with `out`, the run
    folder is written there (refused before any work where it cannot be)."""
    if out is not None:
        check_out_dir(out, force=force)
    table, file_name, sha = read_answers(source)
    where = str(source) if not isinstance(source, pa.Table) else "answers"
    study, rows = _study_rows(table, study, where)
    answers, left_out, skipped = _parse(rows, where)
    if not answers:
        raise DataError(
            "no answer of a kind a run holds (" + ", ".join(RUN_KINDS) + ") outside practice "
            "and gold items",
            file=where,
        )
    row_bench = {n: str(r["benchmark"]) for n, r in enumerate(rows, 1)}
    selectors = list(dict.fromkeys(row_bench[a.row] for a in answers))
    evaluator = Evaluator(EvalConfig(benchmarks=tuple(selectors), name=name or HUMAN, **config))
    votes: list[Vote] = []
    kept: list[_Answer] = []
    for sel, bench in zip(selectors, evaluator.benchmarks(), strict=True):
        mine = [a for a in answers if row_bench[a.row] == sel]
        votes += _votes(mine, bench)
        items = {(it.subset, str(it.id)) for it in bench.items}
        kept += [a for a in mine if (a.subset, a.base) in items]
    fp = {"backend": HUMAN, "study": study, "file": file_name, "sha256": sha}
    model = ItemVotes(f"{HUMAN}:{study}", votes, fp, source=where, file=file_name,
                      strict_items=strict_items)  # fmt: skip
    with wilson_intervals():  # a sample of a few items: never the bootstrap's [100, 100]
        run = evaluator.run(model, out=out, force=force)
    entries = [(a.kind, a.subset, a.annotator, a.correct) for a in kept]
    return HumanRun(
        run,
        _accuracies(entries, gold=False),
        _accuracies(_gold_entries(rows), gold=True),
        left_out,
        skipped,
        len(model.unknown),
    )


def _study_rows(table: pa.Table, study: str | None, where: str) -> tuple[str, list[dict[str, Any]]]:
    """(the study, its rows): `study`, or the one study the answers hold."""
    check_columns(table, where, NEED)
    rows = table.select(list(NEED)).to_pylist()
    studies = sorted({str(r["study"]) for r in rows})
    if not studies:
        raise DataError("the answers file holds no answers (of any study)", file=where)
    if study is None and len(studies) > 1:
        raise DataError(f"answers of several studies ({', '.join(studies)}): name one", file=where)
    study = study if study is not None else studies[0]
    if study not in studies:
        raise DataError(f"no answers of study {study!r} (it has {', '.join(studies)})", file=where)
    return study, [r for r in rows if r["study"] == study]

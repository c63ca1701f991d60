"""A human study's answers as a lexsem run folder: model "human", spec ``human:STUDY``, per-item
hits under the benchmark's own task and metric names, accuracies with bootstrap CIs and
coverage, so that `lexsem report` (text and ``--html``), `lexsem compare` (McNemar) and the
paper-style tables show the human row beside the models (docs/human-studies.md,
"The human run").

Task kinds → the benchmark's tasks:

- ``tot`` → ``tot`` (``t2t`` on VISLA), ``itt`` → ``itt`` (``i2t``), ``pair`` → ``pair``
  (metric ``acc``): the item's hit is the annotator choosing the right option (SugarCrepe++
  §3, "Human evaluation ... was asked to select the negative caption"; the SugarCrepe pair
  question). The models' secondary metrics (P1-N, P2-N) compare scores and have no human
  counterpart; the run holds the main metric.
- ``bivlc_i2t`` / ``bivlc_t2i`` → ``bivlc`` (``winoground``): BiVLC's human baseline (§4,
  "Combining the different annotations derived from an instance, we obtain human performance
  on our three metrics") by the same definitions as the models' (App. D, eqs. 1-3): the
  query of image k (item id ``ID#imagek``) answered right is Ipos2T (k = 0) / Ineg2T (k = 1),
  the query of caption k (``ID#captionk``) Tpos2I / Tneg2I; I2T needs both image queries
  right, T2I both caption queries, Group all four (Table 2: 90.40 / 93.00 / 86.80).
- ``best_of_k``, ``ambiguity``, ``validate``: construction steps, not accuracy: left out of
  the run (counted in `HumanRun.left_out`; `lexsem.annotate.fold_back` and the agreement
  statistics read them).

One hit per item and metric (`compare` pairs items): where several annotators answered a
query, the query's hit is their majority — right when more than half of them are right; an
even split is a tie (the run's ``tie`` column), a failure under the ``strict`` tie policy and a
hit under ``lenient``, as a tie between scores is for a model. With one annotator per item
(SugarCrepe++'s and BiVLC's designs) the run's accuracy is the papers' accuracy. The accuracy
over every answer (each annotator's answer counted once, the papers' "average human
performance" when items overlap) is `HumanRun.answer_level`.

Practice answers are left out; gold (attention) items are left out of the run and reported
apart (`HumanRun.gold`); "skip" is no answer. An answer about an item the benchmark selection
lacks is left out and named in the run's coverage (`RunRecord.recorded`), as `recorded:`
answers are.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.benchmarks.coverage import row_coverage
from lexsem.benchmarks.load import LoadedBenchmark
from lexsem.config import EvalConfig
from lexsem.construct.answers_table import check_columns, read_answers
from lexsem.errors import DataError, LexsemError
from lexsem.evaluator import Evaluator
from lexsem.models.protocols import fingerprint_key
from lexsem.results import build
from lexsem.results.run import Run
from lexsem.results.run_folder import check_out_dir
from lexsem.results.schema import MetricResult, RecordedCoverage, Timings, UnknownAnswer
from lexsem.stats.seeds import bootstrap_seed
from lexsem.stats.ties import Hits, all_of

__all__ = [
    "HUMAN",
    "RUN_KINDS",
    "AnswerAccuracy",
    "HumanRun",
    "bivlc_hits",
    "human_run",
    "majority",
]

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
# BiVLC's per-query metrics (App. D): the query each one is
QUERY_METRIC = {"image0": "ipos2t", "image1": "ineg2t", "caption0": "tpos2i",
                "caption1": "tneg2i"}  # fmt: skip
WINOGROUND = {"group": "group", "text": "i2t", "image": "t2i"}


def majority(right: int, n: int, policy: str = "strict") -> tuple[bool, bool]:
    """(hit, tie) of a query `right` of whose `n` answers are right: a hit when more than half
    are; an even split is a tie, a hit only under the `lenient` tie policy."""
    tie = 2 * right == n
    return (2 * right > n) or (tie and policy == "lenient"), tie


def bivlc_hits(queries: dict[str, tuple[bool, bool]]) -> dict[str, tuple[bool, bool]]:
    """BiVLC's metrics of one instance (App. D) from the (hit, tie) of each answered query
    (`image0`, `image1`, `caption0`, `caption1`): a metric is given only where every query it
    needs was answered."""
    one = {QUERY_METRIC[q]: Hits(np.array([h]), np.array([t])) for q, (h, t) in queries.items()}
    out = {m: (bool(h.hits[0]), bool(h.ties[0])) for m, h in one.items()}
    parts = {"i2t": ("ipos2t", "ineg2t"), "t2i": ("tpos2i", "tneg2i")}
    for name, (a, b) in parts.items():
        if a in one and b in one:
            h = all_of(one[a], one[b])
            out[name] = (bool(h.hits[0]), bool(h.ties[0]))
    if all(m in one for m in QUERY_METRIC.values()):
        h = all_of(*one.values())
        out["group"] = (bool(h.hits[0]), bool(h.ties[0]))
    return out


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


def _item_hits(
    answers: list[_Answer], policy: str
) -> dict[tuple[str, str], dict[str, tuple[bool, bool, int, int]]]:
    """(subset, item) -> metric name -> (hit, tie, answers, right); metric names as BiVLC's
    (`group`, `i2t`, ...) for the quad kinds, `main` for the others."""
    per_query: dict[tuple[str, str, str | None], list[bool]] = {}
    for a in answers:
        per_query.setdefault((a.subset, a.base, a.query), []).append(a.correct)
    out: dict[tuple[str, str], dict[str, tuple[bool, bool, int, int]]] = {}
    for (sub, base, query), flags in per_query.items():
        hit, tie = majority(sum(flags), len(flags), policy)
        out.setdefault((sub, base), {})[query or "main"] = (hit, tie, len(flags), sum(flags))
    for metrics in out.values():
        if "main" in metrics:
            continue
        queries = {q: (h, t) for q, (h, t, _, _) in metrics.items()}
        counts = {q: (n, r) for q, (_, _, n, r) in metrics.items()}
        combined = bivlc_hits(queries)
        needs = {"ipos2t": ["image0"], "ineg2t": ["image1"], "tpos2i": ["caption0"],
                 "tneg2i": ["caption1"], "i2t": ["image0", "image1"],
                 "t2i": ["caption0", "caption1"],
                 "group": ["image0", "image1", "caption0", "caption1"]}  # fmt: skip
        metrics.clear()
        for m, (h, t) in combined.items():
            n = sum(counts[q][0] for q in needs[m])
            r = sum(counts[q][1] for q in needs[m])
            metrics[m] = (h, t, n, r)
    return out


def _metric_rows(
    bench: LoadedBenchmark,
    task: str,
    metric: str,
    got: list[tuple[Any, tuple[bool, bool, int, int]]],
    cfg: EvalConfig,
) -> tuple[list[MetricResult], pa.Table]:
    """The result rows and per-item table of one metric over the items `got` holds (in the
    benchmark's order), as the Evaluator writes them."""
    by_items: dict[str, list[Any]] = {}
    flags: dict[str, list[tuple[bool, bool]]] = {}
    for item, (h, t, _, _) in got:
        by_items.setdefault(item.subset, []).append(item)
        flags.setdefault(item.subset, []).append((h, t))
    order = [s.spec.name for s in bench.subsets if s.spec.name in by_items]
    by_subset = {
        s: Hits(np.array([h for h, _ in flags[s]]), np.array([t for _, t in flags[s]]))
        for s in order
    }
    by_items = {s: by_items[s] for s in order}
    boot = {"n_boot": cfg.n_boot, "seed": bootstrap_seed(cfg.seed, bench.spec.name, task, metric),
            "confidence": cfg.confidence}  # fmt: skip
    scored = {s: len(v) for s, v in by_items.items()}
    results = []
    for acc, label in bench.spec.summarize(task, metric, by_subset, by_items, **boot):
        n_scored, n_total = row_coverage(
            bench.spec, acc.subset, scored, bench.totals(), len(bench.unassigned)
        )
        results.append(MetricResult(benchmark=bench.spec.name, task=task, metric=metric,
                                    label=label, items_scored=n_scored, items_total=n_total,
                                    **acc.to_dict()))  # fmt: skip
    rows = [(item, v) for s in order for item, v in got if item.subset == s]
    n = len(rows)
    table = pa.table(
        {
            "benchmark": pa.array([bench.spec.name] * n, pa.string()),
            "subset": pa.array([it.subset for it, _ in rows], pa.string()),
            "item_id": pa.array([str(it.id) for it, _ in rows], pa.string()),
            "task": pa.array([task] * n, pa.string()),
            "metric": pa.array([metric] * n, pa.string()),
            "hit": pa.array([v[0] for _, v in rows], pa.bool_()),
            "tie": pa.array([v[1] for _, v in rows], pa.bool_()),
            "answers": pa.array([v[2] for _, v in rows], pa.int64()),
            "right": pa.array([v[3] for _, v in rows], pa.int64()),
        }
    )
    return results, table


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
    t_start = time.perf_counter()
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
    cfg = EvalConfig(benchmarks=tuple(selectors), name=name or HUMAN, **config)
    t0 = time.perf_counter()
    loaded = Evaluator(cfg).benchmarks()
    load_s = time.perf_counter() - t0
    t2 = time.perf_counter()
    scored = _Scored()
    for sel, bench in zip(selectors, loaded, strict=True):
        mine = [a for a in answers if row_bench[a.row] == sel]
        scored.add(bench, sel, mine, cfg, strict_items, where)
    if not scored.results:
        first = scored.unknown[0] if scored.unknown else None
        raise DataError(
            "no answer is about an item of the benchmark selection"
            + (f" ({first.where}: item {first.subset}/{first.item_id})" if first else ""),
            file=where,
        )
    metrics_s = time.perf_counter() - t2
    fp = {"backend": HUMAN, "study": study, "file": file_name, "sha256": sha}
    info = build.model_info(_Named(name or HUMAN), f"{HUMAN}:{study}", fp, fingerprint_key(fp),
                            cfg.batch_size)  # fmt: skip
    record = build.run_record(
        info,
        [build.benchmark_info(b, {}) for b in loaded],
        build.run_config(cfg, scored.tasks, {}),
        scored.results,
        _timings(time.perf_counter() - t_start, load_s, metrics_s),
    )
    record.recorded = RecordedCoverage(
        file=file_name,
        answers=len(answers),
        items_answered=scored.answered,
        items_total=scored.totals,
        unknown=scored.unknown,
    )
    run = Run(record, pa.concat_tables(scored.tables, promote_options="default"))
    if out is not None:
        run.save(out, force=force)
    entries = [(a.kind, a.subset, a.annotator, a.correct) for a in scored.kept]
    return HumanRun(
        run,
        _accuracies(entries, gold=False),
        _accuracies(_gold_entries(rows), gold=True),
        left_out,
        skipped,
        len(scored.unknown),
    )


def _study_rows(table: pa.Table, study: str | None, where: str) -> tuple[str, list[dict[str, Any]]]:
    """(the study, its rows): `study`, or the one study the answers hold."""
    check_columns(table, where, NEED)
    rows = table.select(list(NEED)).to_pylist()
    studies = sorted({str(r["study"]) for r in rows})
    if study is None and len(studies) > 1:
        raise DataError(f"answers of several studies ({', '.join(studies)}): name one", file=where)
    study = study if study is not None else (studies[0] if studies else "")
    if study not in studies:
        raise DataError(f"no answers of study {study!r} (it has {', '.join(studies)})", file=where)
    return study, [r for r in rows if r["study"] == study]


@dataclass
class _Scored:
    """What the benchmarks' answers give, gathered benchmark by benchmark: the run's result
    rows and per-item tables, its tasks, the answers about items a benchmark has (`kept`) and
    those about items it lacks (`unknown`), and the coverage per subset."""

    results: list[MetricResult] = field(default_factory=list)
    tables: list[pa.Table] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    unknown: list[UnknownAnswer] = field(default_factory=list)
    kept: list[_Answer] = field(default_factory=list)
    answered: dict[str, int] = field(default_factory=dict)  # subset -> items answered
    totals: dict[str, int] = field(default_factory=dict)  # subset -> items

    def add(
        self, bench: LoadedBenchmark, sel: str, mine: list[_Answer], cfg: EvalConfig,
        strict_items: bool, where: str,
    ) -> None:  # fmt: skip
        """Score the answers `mine` about benchmark `bench` (selector `sel`)."""
        items = {(it.subset, str(it.id)): it for it in bench.items}
        known = self._known(items, sel, mine, strict_items, where)
        self.kept += known
        self._cover(bench, known)
        for task in dict.fromkeys(_task(bench, a.kind) for a in known):
            self.tasks.append(task)
            hits = _item_hits([a for a in known if _task(bench, a.kind) == task], cfg.tie_policy)
            for metric, key in _metrics(task).items():
                got = [(it, hits[k][key]) for k, it in items.items()
                       if k in hits and key in hits[k]]  # fmt: skip
                if got:
                    res, tab = _metric_rows(bench, task, metric, got, cfg)
                    self.results += res
                    self.tables.append(tab)

    def _known(
        self, items: dict[tuple[str, str], Any], sel: str, mine: list[_Answer],
        strict_items: bool, where: str,
    ) -> list[_Answer]:  # fmt: skip
        """The answers about items the benchmark has; the others noted as unknown (an error
        under `strict_items`)."""
        known = []
        for a in mine:
            if (a.subset, a.base) in items:
                known.append(a)
                continue
            if strict_items:
                raise DataError(f"row {a.row}: an answer about item {a.subset}/{a.base}, which "
                                f"benchmark {sel} does not have", file=where)  # fmt: skip
            self.unknown.append(
                UnknownAnswer(where=f"row {a.row}", subset=a.subset, item_id=a.base)
            )
        return known

    def _cover(self, bench: LoadedBenchmark, known: list[_Answer]) -> None:
        """Count the benchmark's items per subset, and those answered."""
        for s in bench.subsets:
            self.totals[s.spec.name] = self.totals.get(s.spec.name, 0) + len(s.items)
        seen = {(a.subset, a.base) for a in known}
        for s in bench.subsets:
            n_seen = sum(1 for it in s.items if (it.subset, str(it.id)) in seen)
            self.answered[s.spec.name] = self.answered.get(s.spec.name, 0) + n_seen


def _timings(total_s: float, load_s: float, metrics_s: float) -> Timings:
    """A human run's timings: loading and scoring, no encoding."""
    return Timings(
        total_s=total_s,
        load_data_s=load_s,
        encode_s=0.0,
        cache_s=0.0,
        metrics_s=metrics_s,
        n_texts_unique=0,
        n_texts_cached=0,
        n_texts_encoded=0,
    )


def _metrics(task: str) -> dict[str, str]:
    """metric name in the run -> key of `_item_hits`."""
    from lexsem.tasks.catalog import get_task

    if task == "bivlc":
        return {m: m for m in get_task(task).metrics}
    if task == "winoground":
        return dict(WINOGROUND)
    return {get_task(task).metrics[0]: "main"}


@dataclass(frozen=True)
class _Named:
    name: str

"""`Evaluator(config).run(model) -> Run`: the one path every benchmark x task x model takes.

benchmarks (load, once per Evaluator) -> tasks the model can run -> one plan of unique requests
-> the engine (through the model's request store) -> score columns -> hits per metric ->
accuracies with CIs and the benchmark's aggregates -> a `Run` with its provenance.

An Evaluator keeps its benchmarks, its image store and the images it decoded (within
`EvalConfig.keep_decoded_mb`, `lexsem.images.memory`) across `run()` calls: a training loop
evaluates every epoch without reloading data or decoding an image twice. Each run reads the
model's fingerprint afresh, so a model whose weights changed never reads another state's cache
entries. The config is plain
data: it pickles, and `Evaluator(config)` in another process runs the same evaluation.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem import clock
from lexsem.benchmarks.coverage import row_coverage
from lexsem.benchmarks.load import LoadedBenchmark, load_benchmark
from lexsem.config import EvalConfig
from lexsem.engine.plan import Plan, Work, make_plan
from lexsem.engine.request_store import RequestStore
from lexsem.engine.runner import (
    CHAT,
    CHAT_SCORES,
    IMAGE,
    PAIR,
    SCORER,
    TEXT,
    VOTES,
    Outcome,
    RunOptions,
    capabilities,
    execute,
)
from lexsem.engine.scores import Scores
from lexsem.errors import LexsemError
from lexsem.images.memory import DecodedImages
from lexsem.models.protocols import batch_size_refusal, describe_missing, fingerprint_key
from lexsem.paths import cache_dir as default_cache_dir
from lexsem.results import build
from lexsem.results.run import Run
from lexsem.results.run_folder import check_out_dir
from lexsem.results.schema import (
    Breakdown,
    MetricResult,
    RecordedCoverage,
    RuleComparison,
    Timings,
)
from lexsem.stats.bootstrap import ci_memo
from lexsem.stats.seeds import bootstrap_seed
from lexsem.stats.ties import Hits
from lexsem.tasks.base import Task
from lexsem.tasks.blind import BLIND_TRIPLET, blind_task
from lexsem.tasks.catalog import BLIND, SYNONYMS, find_task, get_task
from lexsem.tasks.choice_task import read_by
from lexsem.tasks.voted import voted_task

CI_STORE = "bootstrap-intervals"  # the request store of bootstrap intervals, beside the models'


@dataclass
class Planned:
    """A run's model, capabilities, works and plan (`Evaluator.plan`)."""

    model: Any
    spec: str
    caps: set[str]
    works: list[Work]
    plan: Plan
    load_s: float  # seconds loading the benchmarks


class Evaluator:
    """Evaluates models on the benchmarks of one `EvalConfig`."""

    def __init__(self, config: EvalConfig, *, images: Any = None) -> None:
        self.config = config
        self._images = images  # an ImageStore; built on first need otherwise
        self._loaded: dict[str, LoadedBenchmark] = {}
        # decoded images kept across runs, within `config.keep_decoded_mb`
        self.decoded = DecodedImages(config.keep_decoded_mb * 2**20)

    def __getstate__(self) -> dict[str, Any]:  # a copy in another process reloads its data
        return {"config": self.config, "_images": None, "_loaded": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]

    # -- data ------------------------------------------------------------------------------
    def benchmarks(self) -> list[LoadedBenchmark]:
        """The selected benchmarks, loaded once per Evaluator."""
        cfg = self.config
        for sel in cfg.benchmarks:
            if sel not in self._loaded:
                self._loaded[sel] = load_benchmark(
                    sel, data_dir=cfg.data_dir, cache_root=cfg.cache_dir, offline=cfg.offline
                )
        return [self._loaded[sel] for sel in cfg.benchmarks]

    def image_store(self) -> Any:
        if self._images is None:
            from lexsem.images.image_store import ImageStore

            cfg = self.config
            self._images = ImageStore(
                coco_val2017=cfg.coco_val2017,
                coco_train2017=cfg.coco_train2017,
                image_root=cfg.image_root,
                cache_root=default_cache_dir(cfg.cache_dir),
                max_pixels=cfg.max_image_pixels,
            )
        attach_embedded_images(self._images)
        return self._images

    # -- the run ---------------------------------------------------------------------------
    def run(
        self, model: str | object, *, out: str | Path | None = None, force: bool = False
    ) -> Run:
        """Evaluate `model`; with `out`, write the run folder there. An `out` that cannot take
        the run (a file, read-only, full, or holding a run without `force`) fails before any
        work (`lexsem.results.run_folder.check_out_dir`)."""
        if out is not None:
            check_out_dir(out, force=force)
        with clock.running() as run_clock:
            return self._run(model, out, force, run_clock)

    def _run(self, model: str | object, out: str | Path | None, force: bool, run_clock: Any) -> Run:
        t_start = time.perf_counter()
        cfg = self.config
        planned = self.plan(model)
        model, spec, caps, works, plan = (
            planned.model,
            planned.spec,
            planned.caps,
            planned.works,
            planned.plan,
        )
        load_s = planned.load_s
        fp = model.fingerprint  # read per run: weights that changed change the key
        fkey = fingerprint_key(fp)
        # recorded answers, people's votes: no store, no images
        by_item = bool(getattr(model, "by_item", False))
        use_store = cfg.use_cache and not by_item
        with clock.span("store"):
            store = RequestStore(default_cache_dir(cfg.cache_dir), fkey) if use_store else None
        try:
            needs_images = plan.pairs or (plan.asks and not by_item)
            images = self.image_store() if needs_images else None
            outcome = execute(model, plan, store, images, self._options(), works)
        finally:
            if store is not None:
                with clock.span("store"):
                    store.close()
        started = (t_start, load_s, run_clock)
        run_fp = run_fingerprint(model, fp, works, cfg, caps)
        shown = Plan() if by_item else plan
        return self._finish(model, spec, run_fp, works, shown, outcome, started, out, force)

    def plan(self, model: str | object) -> Planned:
        """What `run` asks of `model`: the model (a spec is loaded lazily: no weights), its
        capabilities, each benchmark's tasks and the plan of unique requests. A model that can
        run none of them, or a file of it that cannot be read, fails here."""
        with clock.span("model_load"):  # its library imported, its files checked
            model, spec = self._model(model)
            _check_files(model)  # an unreadable or damaged model file fails before any data work
        caps = capabilities(model)
        if not caps:
            raise LexsemError(describe_missing(model))
        for cap, method in ((TEXT, "encode"), (SCORER, "score_texts")):
            refusal = batch_size_refusal(model, method) if cap in caps else None
            if refusal:
                raise LexsemError(refusal)
        t0 = time.perf_counter()
        with clock.span("data"):
            works = [self._work(b, caps, model) for b in self.benchmarks()]
        load_s = time.perf_counter() - t0
        plan = make_plan(works, pairs_as_texts=not caps & {PAIR, CHAT_SCORES})
        return Planned(model, spec, caps, works, plan, load_s)

    def derive(self, **changes: Any) -> Evaluator:
        """An Evaluator of this config with `changes` (e.g. `tasks`) that shares the benchmarks
        loaded, the image store and the decoded images (its benchmarks must be the same)."""
        config = self.config.model_copy(update=changes)
        if config.benchmarks != self.config.benchmarks:
            raise LexsemError("a derived Evaluator evaluates the same benchmarks")
        other = Evaluator(EvalConfig(**config.model_dump()), images=self._images)
        other._loaded, other.decoded = self._loaded, self.decoded
        return other

    def _finish(
        self,
        model: Any,
        spec: str,
        fp: dict[str, Any],
        works: list[Work],
        plan: Plan,
        outcome: Outcome,
        started: tuple[float, float, Any],
        out: str | Path | None,
        force: bool,
    ) -> Run:
        """Scores -> hits per metric -> accuracies with CIs -> the `Run` (written to `out`)."""
        cfg = self.config
        t_start, load_s, run_clock = started
        t2 = time.perf_counter()
        with clock.span("scoring"), self._ci_store() as ci_store, ci_memo(ci_store):
            scored = [self._score(b_i, w, outcome.scores) for b_i, w in enumerate(works)]
        metrics_s = time.perf_counter() - t2
        record = build.run_record(
            _named(
                build.model_info(model, spec, fp, fingerprint_key(fp), cfg.batch_size), cfg.name
            ),
            [
                build.benchmark_info(b, s.skipped)
                for b, s in zip(self.benchmarks(), scored, strict=True)
            ],
            build.run_config(
                cfg,
                [t.name for w in works for t in w.tasks],
                self._image_cfg(plan),
                choice=any(t.answer_rule is not None for w in works for t in w.tasks),
            ),
            [r for s in scored for r in s.results],
            _timings(time.perf_counter() - t_start, load_s, metrics_s, outcome, run_clock),
        )
        tables = [t for s in scored for t in s.tables]
        table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
        record.answer_rules = [r for s in scored for r in s.rule_checks]
        record.recorded = recorded_coverage(model, self.benchmarks())
        run = Run(record, table)
        if out is not None:
            run.save(out, force=force)
        return run

    def _ci_store(self) -> Any:
        """The store of bootstrap intervals (`lexsem.stats.bootstrap.ci_memo`), shared by all
        models: an interval is a function of the hits, not of the model that made them."""
        cfg = self.config
        if not cfg.use_cache or cfg.n_boot <= 0:
            return contextlib.nullcontext()
        return RequestStore(default_cache_dir(cfg.cache_dir), CI_STORE)

    def _model(self, model: str | object) -> tuple[Any, str]:
        if isinstance(model, str):
            from lexsem.models.factory import load_model

            cfg = self.config
            return load_model(model, device=cfg.device, dtype=cfg.dtype, offline=cfg.offline), model
        return model, getattr(model, "name", type(model).__name__)

    def _options(self) -> RunOptions:
        cfg = self.config
        return RunOptions(
            batch_size=cfg.batch_size,
            num_workers=cfg.num_workers,
            skip_bad_images=cfg.skip_bad_images,
            exif_transpose=cfg.exif_transpose,
            progress=cfg.progress,
            decoded=self.decoded if self.decoded.max_bytes else None,
            shots=cfg.shots,
            shot_seed=cfg.shot_seed,
            replay_only=cfg.replay_only,
            max_requests=cfg.max_requests,
            concurrency=cfg.concurrency,
        )

    def _image_cfg(self, plan: Any) -> dict[str, Any]:
        if not plan.pairs and not plan.asks:
            return {}
        from lexsem.images.decode import get_profile

        return {
            "on_error": "skip" if self.config.skip_bad_images else "raise",
            "exif_transpose": self.config.exif_transpose,  # None: each profile decides
            "decode": {
                name: get_profile(name).describe() for name in sorted({*plan.pairs, *plan.asks})
            },
        }

    def _work(self, bench: LoadedBenchmark, caps: set[str], model: Any) -> Work:
        if VOTES in caps:  # people's votes: the tasks they answered, read as people answer
            tasks = [voted_task(get_task(t)) for t in model.tasks_for(bench)]
            return Work(bench.spec.name, bench.items, tasks, bench.spec.decode)
        names = select_tasks(bench, self.config.tasks, caps)
        rule = self.config.answer_rule
        tasks = [_blind(bench) if t == BLIND else read_by(get_task(t), rule) for t in names]
        return Work(bench.spec.name, bench.items, tasks, bench.spec.decode)

    def _score(self, b_i: int, work: Work, scores: Scores) -> _Scored:
        bench = self.benchmarks()[b_i]
        out = _Scored()
        for task in work.tasks:
            _score_task(bench, task, work, scores, self.config, out)
        out.skipped = {k: sorted(set(v), key=v.index) for k, v in out.skipped.items()}
        return out


class _Scored:
    def __init__(self) -> None:
        self.results: list[MetricResult] = []
        self.tables: list[pa.Table] = []
        self.skipped: dict[str, list[str]] = {}
        self.rule_checks: list[RuleComparison] = []


def _check_files(model: Any) -> None:
    """A lexsem model checks its files (`LazyModel.check_files`); other objects have none."""
    check = getattr(model, "check_files", None)
    if callable(check):
        check()


def _blind(bench: LoadedBenchmark) -> Task:
    n_captions = max((len(it.texts()) for it in bench.items), default=0)
    return blind_task(bench.spec.item_kind, n_captions) if bench.items else BLIND_TRIPLET


def _score_task(
    bench: LoadedBenchmark,
    task: Task,
    work: Work,
    scores: Scores,
    cfg: EvalConfig,
    out: _Scored,
) -> None:
    cols = {c.name: scores.column(c, work, task.name) for c in task.columns}
    texts = {
        k: v for c in task.columns for k, v in scores.extra_columns(c, work, task.name).items()
    }
    flags = {c.name for c in task.columns if c.kind == "flag"}
    finite = {k: np.isfinite(v) for k, v in cols.items() if k not in flags}
    every = np.ones(len(work.items), bool)
    valid = np.logical_and.reduce(list(finite.values()) or [every])
    # the items each metric is over: those whose columns it reads have values
    masks = {
        m: np.logical_and.reduce([finite[c] for c in needed if c in finite] or [every])
        if (needed := task.metric_columns.get(m)) is not None
        else valid
        for m in task.metrics
    }
    scored_any = np.logical_or.reduce([valid, *masks.values()])
    for it, ok in zip(work.items, scored_any, strict=True):
        if not ok:
            out.skipped.setdefault(it.subset, []).append(it.id)
    if not scored_any.any():
        raise LexsemError(
            f"no item of {bench.spec.name} could be scored for task {task.name!r}: all "
            f"{len(work.items)} were skipped (their images are missing, unreadable or too "
            "large, or no answer was recorded); check the image folders or the answers"
        )
    if task.metric_columns:  # hits of every item, each metric kept over its own items
        hits_of = {
            m: Hits(h.hits[masks.get(m, valid)], h.ties[masks.get(m, valid)])
            for m, h in task.compute(cols, cfg.tie_policy).items()
        }
    else:  # every metric reads every column: hits of the valid items only
        hits_of = task.compute({k: v[valid] for k, v in cols.items()}, cfg.tie_policy)
    for metric, hits in hits_of.items():
        mask = masks.get(metric, valid)
        _score_metric(bench, task, metric, hits, work, mask, cols, texts, cfg, out)
    if task.other_reading is not None:
        _compare_readings(task, work, scores, cfg, masks, valid, hits_of, out)


def _compare_readings(
    task: Task,
    work: Work,
    scores: Scores,
    cfg: EvalConfig,
    masks: dict[str, np.ndarray],
    valid: np.ndarray,
    hits_of: dict[str, Hits],
    out: _Scored,
) -> None:
    """The hits of `task` read by its other answer rule (`Task.other_reading`), beside the
    run's, per metric and subset: the rows of `RunRecord.answer_rules`."""
    other = task.other_reading
    assert other is not None and task.metric_columns  # multiple choice: one mask per metric
    cols = {c.name: scores.column(c, work, task.name) for c in other.columns}
    other_hits = other.compute(cols, cfg.tie_policy)
    subset_of = np.array([it.subset for it in work.items])
    for metric, hits in hits_of.items():
        mask = masks.get(metric, valid)
        theirs = other_hits[metric].hits[mask]
        for subset in dict.fromkeys(subset_of[mask].tolist()):
            in_subset = subset_of[mask] == subset
            mine_s, theirs_s = hits.hits[in_subset], theirs[in_subset]
            out.rule_checks.append(
                RuleComparison(
                    benchmark=work.benchmark,
                    task=task.name,
                    metric=metric,
                    subset=subset,
                    n=int(in_subset.sum()),
                    rule=str(task.answer_rule),
                    hits=int(mine_s.sum()),
                    other_rule=str(other.answer_rule),
                    other_hits=int(theirs_s.sum()),
                    disagree=int((mine_s != theirs_s).sum()),
                )
            )


def recorded_coverage(model: Any, benchmarks: list[LoadedBenchmark]) -> RecordedCoverage | None:
    """What a model of recorded answers covers of `benchmarks` (`coverage` of the
    `recorded:` backend, of people's votes), for the run record; None for any other model."""
    coverage = getattr(model, "coverage", None)
    return RecordedCoverage(**coverage(benchmarks)) if callable(coverage) else None


def _score_metric(
    bench: LoadedBenchmark,
    task: Task,
    metric: str,
    hits: Hits,
    work: Work,
    mask: np.ndarray,
    cols: dict[str, np.ndarray],
    texts: dict[str, np.ndarray],
    cfg: EvalConfig,
    out: _Scored,
) -> None:
    """One metric's rows (per subset and the benchmark's aggregates) and per-item table, over
    the items `mask` keeps."""
    items = [it for it, ok in zip(work.items, mask, strict=True) if ok]
    subset_of = np.array([it.subset for it in items])
    # subsets with no item scored (every image skipped) get no row; the coverage says so
    by_items = {
        s.spec.name: [it for it in items if it.subset == s.spec.name] for s in bench.subsets
    }
    by_items = {name: its for name, its in by_items.items() if its}
    if not by_items:
        return
    scored = {name: len(its) for name, its in by_items.items()}
    by_subset = {
        name: Hits(hits.hits[subset_of == name], hits.ties[subset_of == name]) for name in by_items
    }
    boot = {
        "n_boot": cfg.n_boot,
        "seed": bootstrap_seed(cfg.seed, bench.spec.name, task.name, metric),
        "confidence": cfg.confidence,
    }
    for acc, label in bench.spec.summarize(task.name, metric, by_subset, by_items, **boot):
        n_scored, n_total = row_coverage(
            bench.spec, acc.subset, scored, bench.totals(), len(bench.unassigned)
        )
        out.results.append(
            MetricResult(
                benchmark=bench.spec.name,
                task=task.name,
                metric=metric,
                label=label,
                items_scored=n_scored,
                items_total=n_total,
                **acc.to_dict(),
            )
        )
    kept = {k: v[mask] for k, v in {**cols, **texts}.items()}
    out.tables.append(
        _items_table(bench.spec.name, task.name, metric, items, subset_of, hits, kept)
    )


def _items_table(
    bench: str,
    task: str,
    metric: str,
    items: list[Any],
    subset_of: np.ndarray,
    hits: Hits,
    cols: dict[str, np.ndarray],
) -> pa.Table:
    n = len(items)
    return pa.table(
        {
            "benchmark": pa.array([bench] * n),
            "subset": pa.array(subset_of.tolist(), pa.string()),
            "item_id": pa.array([it.id for it in items], pa.string()),
            "task": pa.array([task] * n, pa.string()),
            "metric": pa.array([metric] * n, pa.string()),
            "hit": pa.array(hits.hits, pa.bool_()),
            "tie": pa.array(hits.ties, pa.bool_()),
            **{k: pa.array(v.tolist() if v.dtype == object else v) for k, v in cols.items()},
        }
    )


def _named(info: Any, name: str | None) -> Any:
    """The model info with the display name `--name` gave (the run id does not depend on it)."""
    return info if name is None else info.model_copy(update={"name": name})


def _timings(
    total_s: float, load_s: float, metrics_s: float, outcome: Outcome, run_clock: Any
) -> Timings:
    """The run's timings: its counts, and where its wall (`total_s` after the start-up) went."""
    timing = dict(outcome.timing)
    workers = int(timing.pop("decode_workers", 0))
    spent = run_clock.spent
    wall = total_s + spent["start_up"]
    parts = {f"{name}_s": max(0.0, spent[name]) for name in clock.PARTS}
    breakdown = Breakdown(
        wall_s=wall,
        **parts,
        rest_s=max(0.0, wall - sum(parts.values())),
        decode_workers=workers,
        decode_workers_s=run_clock.beside.get("decode", 0.0) if workers else 0.0,
        decode_read_s=run_clock.beside.get("decode_read", 0.0),
        decode_pil_s=run_clock.beside.get("decode_pil", 0.0),
        decode_preprocess_s=run_clock.beside.get("decode_preprocess", 0.0),
    )
    return Timings(
        total_s=total_s,
        load_data_s=load_s,
        metrics_s=metrics_s,
        breakdown=breakdown,
        **_timing_defaults(timing),
    )


def _timing_defaults(timing: dict[str, Any]) -> dict[str, Any]:
    base = {
        "encode_s": 0.0,
        "cache_s": 0.0,
        "n_texts_unique": 0,
        "n_texts_cached": 0,
        "n_texts_encoded": 0,
    }
    return {**base, **timing}


def attach_embedded_images(store: Any) -> None:
    """Make the images embedded in loaded Hugging Face datasets (`mem:` refs) readable."""
    from lexsem.benchmarks.sources.hf_images import loaded_stores

    for hf_store in loaded_stores():
        store.add_mapping(hf_store)


def select_tasks(
    bench: LoadedBenchmark, requested: Sequence[str] | None, caps: set[str]
) -> list[str]:
    """The tasks of `bench` to run for a model with capabilities `caps` (all it can run when
    nothing is requested); clear errors for a task the benchmark lacks or the model cannot run."""
    spec = bench.spec
    if SCORER in caps:
        if spec.item_kind == "quad":
            raise LexsemError(f"no blind baseline is defined for {spec.name!r} (quad items)")
        if requested and set(requested) != {BLIND}:
            raise LexsemError("a blind text scorer runs the task 'blind' only")
        return [BLIND]
    if CHAT in caps:
        return _chat_tasks(spec, requested, caps)
    supported = list(spec.text_tasks) if TEXT in caps else []
    if caps & {IMAGE, PAIR}:
        supported += list(spec.image_tasks)
    if not supported:
        raise LexsemError(_none_supported(spec, caps))
    if not requested:
        return _with_images(bench, supported, chosen=False)  # opt-in tasks run only when named
    supported += [t for t in spec.opt_in_tasks if _can_run(get_task(t), caps)]
    chosen = [_choose(t, supported, spec, caps) for t in requested]
    return _with_images(bench, list(dict.fromkeys(chosen)), chosen=True)


def _with_images(bench: LoadedBenchmark, tasks: list[str], *, chosen: bool) -> list[str]:
    """`tasks` as they can run on `bench`: on a benchmark none of whose items names an image
    (a text-only build), its image tasks are left out when more is left and nothing was
    chosen; else one line, before the model's weights are read."""
    images = [t for t in tasks if t in bench.spec.image_tasks]
    items = getattr(bench, "items", None) or ()  # none known: nothing to say
    if not images or not items or any(getattr(it, "image", None) or getattr(it, "image0", None)
                                      for it in items):  # fmt: skip
        return tasks
    rest = [t for t in tasks if t not in images]
    if rest and not chosen:
        return rest
    raise LexsemError(
        f"benchmark {bench.spec.name!r} has no images (none of its items names one): "
        f"{', '.join(images)} scores captions against images; its captions alone are scored "
        "by a blind text scorer (task 'blind': -m gpt2, -m vera or -m cola)"
    )


def image_text_tasks(spec: Any) -> list[str]:
    """The image tasks of benchmark `spec` whose every column is an image-text score: what a
    chat model with log-probabilities runs by VQAScore (`itt` of triplets, `pair`, the ARO
    tasks, `bivlc` and `winoground` with both images)."""
    return [t for t in spec.image_tasks if all(c.kind == "image_text" for c in get_task(t).columns)]


def _chat_tasks(spec: Any, requested: Sequence[str] | None, caps: set[str]) -> list[str]:
    """The tasks a chat model runs on `spec`: the requested ones — multiple choice, and with
    log-probabilities (`CHAT_SCORES`) the image-text tasks by VQAScore — or the papers' main
    multiple-choice prompt of its item kind (`choice_scpp1`, `choice_sc_gpt4v`)."""
    from lexsem.tasks.choice_task import choice_tasks_for

    offered = choice_tasks_for(spec.item_kind) if spec.image_tasks else []
    scored = image_text_tasks(spec) if CHAT_SCORES in caps else []
    if not requested and not offered:
        raise LexsemError(
            f"a generative model answers multiple-choice prompts about images with 2 or 3 "
            f"captions; benchmark {spec.name!r} ({spec.item_kind} items"
            f"{'' if spec.image_tasks else ', no images'}) has no such task"
        )
    if not requested:
        return offered[:1]
    wrong = [t for t in requested if t not in offered and t not in scored]
    if wrong:
        vqa = (
            ""
            if CHAT_SCORES in caps
            else "; image-text tasks are scored by VQAScore from "
            "log-probabilities, which this model does not give (locally: vqa:MODEL)"
        )
        raise LexsemError(
            f"a generative model runs the multiple-choice tasks of {spec.name!r} "
            f"({', '.join(offered) or 'none'}), not {', '.join(wrong)}{vqa}"
        )
    return list(dict.fromkeys(requested))


def run_fingerprint(
    model: Any, fp: dict[str, Any], works: Sequence[Work], cfg: EvalConfig, caps: set[str]
) -> dict[str, Any]:
    """The fingerprint a run records for `model` (its run id's part): the model's own, plus
    what changes a chat model's answers or scores beyond each request's key — the k-shot
    settings of the multiple-choice tasks, and the VQAScore settings of a chat model scoring
    image-text pairs."""
    columns = {c.kind for w in works for t in w.tasks for c in t.columns}
    out = dict(fp)
    if CHAT in caps and "answer" in columns and cfg.shots and not getattr(model, "by_item", 0):
        out.update(shots=cfg.shots, shot_seed=cfg.shot_seed)
    if CHAT_SCORES in caps and PAIR not in caps and "image_text" in columns:
        out["vqascore"] = model.vqascore.describe()
    return out


def _can_run(task: Task, caps: set[str]) -> bool:
    """Whether a model with `caps` can run `task`: a task that reads scores as probabilities
    needs a pair scorer (`Task.probability_scores`), other tasks a model of their modality."""
    if task.probability_scores:
        return PAIR in caps
    return TEXT in caps if task.modality == "text" else bool(caps & {IMAGE, PAIR})


def _choose(task: str, supported: list[str], spec: Any, caps: set[str]) -> str:
    if task in supported:
        return task
    if SYNONYMS.get(task) in supported:
        return SYNONYMS[task]
    if task in spec.tasks:
        raise LexsemError(
            f"this model cannot run task {task!r} of benchmark {spec.name!r}"
            f"{_why_not(task, caps, supported)}"
        )
    from lexsem.registry import did_you_mean

    raise LexsemError(
        f"benchmark {spec.name!r} does not support task {task!r}"
        f"{did_you_mean(task, list(spec.tasks))} (supported: {', '.join(spec.tasks)})"
    )


def _why_not(task: str, caps: set[str], supported: list[str]) -> str:
    """Why a model with `caps` cannot run `task`: the protocol the task needs that it lacks."""
    spec = find_task(task)
    if spec is None:
        return ""
    if spec.probability_scores:
        return (
            ": it reads each image-text score as a probability (yes above 0.5) and needs a "
            "pair scorer whose scores are probabilities, such as vqa:MODEL?score=vqa_norm"
        )
    runs = f"; it can run {', '.join(supported)}" if supported else ""
    if spec.modality == "text":
        return (
            ": it compares captions with one another and needs a text encoder (the TextEncoder "
            f"protocol: name, fingerprint, encode){runs}"
        )
    if not caps & {IMAGE, PAIR}:
        return (
            ": it scores captions against images and needs an image encoder (the ImageEncoder "
            "protocol: preprocess, encode_images, e.g. clip:, openclip:) or a pair scorer "
            f"(PairScorer: preprocess, score, e.g. itm:, vqa:); this model has no image side{runs}"
        )
    return ""


def _none_supported(spec: Any, caps: set[str]) -> str:
    if TEXT in caps and spec.image_tasks:
        return (
            f"benchmark {spec.name!r} has no text-only task (its tasks need images: "
            f"{', '.join(spec.image_tasks)}); a text encoder cannot be evaluated on it"
        )
    return (
        f"this model cannot run any task of benchmark {spec.name!r} "
        f"(text tasks: {', '.join(spec.text_tasks) or 'none'}; image tasks: "
        f"{', '.join(spec.image_tasks) or 'none'})"
    )

"""The Python API: `lexsem.evaluate(model, benchmarks, ...)` -> Run.

This module is the only place that ties the layers together: data -> models -> engine ->
metrics -> results.
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np
import pyarrow as pa

from lexsem._version import __version__
from lexsem.data.items import TripletItem
from lexsem.data.load import LoadedBenchmark, load_benchmark
from lexsem.engine.cache import EmbeddingCache
from lexsem.engine.embed import embed_texts
from lexsem.engine.plan import triplet_text_index, unique_texts
from lexsem.engine.similarity import l2_normalize, row_cosine
from lexsem.errors import LexsemError
from lexsem.metrics import tasks as T
from lexsem.metrics.accuracy import summarize
from lexsem.metrics.ties import Hits, check_policy
from lexsem.models.protocols import TextEncoder, fingerprint_key
from lexsem.paths import cache_dir as default_cache_dir
from lexsem.results.run import Run
from lexsem.results.schema import (
    BenchmarkInfo,
    Config,
    FileInfo,
    MetricResult,
    ModelInfo,
    RunRecord,
    Timings,
)

# VISLA calls the text-only triplet task T2T, SugarCrepe++ calls it TOT: either name selects it.
_SYNONYMS = {"tot": "t2t", "t2t": "tot"}


def _select_tasks(bench: LoadedBenchmark, requested: Sequence[str] | None) -> list[str]:
    supported = list(bench.spec.text_tasks)
    if not supported:
        needs = ", ".join(bench.spec.image_tasks) or "none"
        raise LexsemError(
            f"benchmark {bench.spec.name!r} has no text-only task (its tasks need images: "
            f"{needs}); a text encoder cannot be evaluated on it"
        )
    if not requested:
        return supported
    chosen = []
    for t in requested:
        if t in supported:
            chosen.append(t)
        elif _SYNONYMS.get(t) in supported:
            chosen.append(_SYNONYMS[t])
        else:
            raise LexsemError(
                f"benchmark {bench.spec.name!r} does not support task {t!r} "
                f"(supported: {', '.join(supported)})"
            )
    return list(dict.fromkeys(chosen))


def _environment() -> dict[str, str]:
    env = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("numpy", "torch", "transformers", "sentence-transformers"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            env[pkg] = metadata.version(pkg)
    return env


def _columns(
    task: T.TaskSpec, items: list[TripletItem], unit: np.ndarray, index: dict[str, int]
) -> dict[str, np.ndarray]:
    p1, p2, n = triplet_text_index(items, index)
    cols: dict[str, np.ndarray] = {
        T.S_P1_P2: row_cosine(unit, p1, p2),
        T.S_P1_N: row_cosine(unit, p1, n),
        T.S_P2_N: row_cosine(unit, p2, n),
    }
    if T.SWAP in task.columns:
        cols[T.SWAP] = np.fromiter((it.p2_closer_to_n() for it in items), bool, len(items))
    return {k: cols[k] for k in task.columns}


def evaluate(
    model: str | TextEncoder,
    benchmarks: Sequence[str] | str,
    *,
    tasks: Sequence[str] | None = None,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    offline: bool | None = None,
    tie_policy: str = "strict",
    seed: int = 0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    batch_size: int = 64,
    device: str | None = None,
    dtype: str | None = None,
    out: str | Path | None = None,
    progress: bool = False,
) -> Run:
    """Evaluate a text encoder on one or more benchmarks (`NAME` or `NAME/SUBSET`).

    Every unique text of all benchmarks is encoded once (cached across runs per model
    fingerprint); per-item similarities, hits and ties are kept in the returned `Run`, which is
    also written to `out` when given.
    """
    t_start = time.perf_counter()
    policy = check_policy(tie_policy)
    selectors = [benchmarks] if isinstance(benchmarks, str) else list(benchmarks)
    if not selectors:
        raise LexsemError("no benchmark given")

    if isinstance(model, str):
        from lexsem.models.registry import load_text_encoder

        encoder: TextEncoder = load_text_encoder(model, device=device, dtype=dtype)
        spec_str = model
    else:
        encoder, spec_str = model, getattr(model, "name", type(model).__name__)

    t0 = time.perf_counter()
    loaded = [
        load_benchmark(s, data_dir=data_dir, cache_root=cache_dir, offline=offline)
        for s in selectors
    ]
    names = [b.spec.name for b in loaded]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise LexsemError(
            f"benchmark {dup[0]!r} given more than once; select several subsets as "
            f"{dup[0]}/SUBSET1,SUBSET2"
        )
    chosen = [_select_tasks(b, tasks) for b in loaded]
    load_s = time.perf_counter() - t0

    fp = encoder.fingerprint
    fkey = fingerprint_key(fp)
    texts = unique_texts(b.items for b in loaded)
    cache = EmbeddingCache(default_cache_dir(cache_dir), fkey) if use_cache else None
    try:
        emb, stats = embed_texts(encoder, texts, cache, batch_size=batch_size, progress=progress)
    finally:
        if cache is not None:
            cache.close()

    t1 = time.perf_counter()
    unit = l2_normalize(emb)
    index = {t: i for i, t in enumerate(texts)}
    results: list[MetricResult] = []
    tables: list[pa.Table] = []
    for b_i, (bench, bench_tasks) in enumerate(zip(loaded, chosen, strict=True)):
        items: list[TripletItem] = bench.items  # type: ignore[assignment]
        subset_of = np.array([it.subset for it in items])
        for task_name in bench_tasks:
            task = T.get_task(task_name)
            cols = _columns(task, items, unit, index)
            per_metric = task.compute(cols, policy)
            for m_i, (metric, hits) in enumerate(per_metric.items()):
                by_subset = {
                    s.spec.name: Hits(
                        hits.hits[subset_of == s.spec.name], hits.ties[subset_of == s.spec.name]
                    )
                    for s in bench.subsets
                }
                for acc in summarize(
                    by_subset,
                    n_boot=n_boot,
                    seed=seed + 7919 * b_i + 104729 * m_i,
                    confidence=confidence,
                ):
                    results.append(
                        MetricResult(
                            benchmark=bench.spec.name,
                            task=task_name,
                            metric=metric,
                            **acc.to_dict(),
                        )
                    )
                tables.append(
                    pa.table(
                        {
                            "benchmark": pa.array([bench.spec.name] * len(items)),
                            "subset": pa.array(subset_of.tolist()),
                            "item_id": pa.array([it.id for it in items]),
                            "task": pa.array([task_name] * len(items)),
                            "metric": pa.array([metric] * len(items)),
                            "hit": pa.array(hits.hits),
                            "tie": pa.array(hits.ties),
                            **{k: pa.array(v) for k, v in cols.items()},
                        }
                    )
                )
    metrics_s = time.perf_counter() - t1

    bench_infos = [
        BenchmarkInfo(
            name=b.spec.name,
            subsets=[s.spec.name for s in b.subsets],
            items={s.spec.name: len(s.items) for s in b.subsets},
            files=[FileInfo(**f) for f in b.files()],
            dropped=b.dropped(),
        )
        for b in loaded
    ]
    config = Config(
        tasks=sorted({t for ts in chosen for t in ts}),
        tie_policy=policy,
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
    )
    ident = hashlib.sha256(
        (fkey + repr([bi.model_dump() for bi in bench_infos]) + config.model_dump_json()).encode()
    ).hexdigest()[:16]
    record = RunRecord(
        lexsem_version=__version__,
        run_id=ident,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        model=ModelInfo(
            spec=spec_str,
            name=getattr(encoder, "name", spec_str),
            fingerprint=fp,
            fingerprint_key=fkey,
            device=getattr(encoder, "device", None),
            dtype=fp.get("dtype") if isinstance(fp.get("dtype"), str) else None,
            batch_size=batch_size,
        ),
        benchmarks=bench_infos,
        config=config,
        results=results,
        timings=Timings(
            total_s=time.perf_counter() - t_start,
            load_data_s=load_s,
            encode_s=stats.encode_s,
            cache_s=stats.cache_s,
            metrics_s=metrics_s,
            n_texts_unique=stats.n_unique,
            n_texts_cached=stats.n_cached,
            n_texts_encoded=stats.n_encoded,
        ),
        environment=_environment(),
    )
    table = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
    run = Run(record, table)
    if out is not None:
        run.save(out)
    return run

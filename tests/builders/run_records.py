"""Recorded runs for report tests: a run record and its metric results (BiVLC, Winoground);
a run with per-item hits (a human study beside models: `items_run`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    pass


BIVLC_METRICS = ["i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"]


def result(
    bench: str, task: str, metric: str, subset: str, acc: float, ties: int = 0
) -> MetricResult:
    return MetricResult(
        benchmark=bench, task=task, metric=metric, subset=subset, n=100, hits=int(acc),
        ties=ties, accuracy=acc, ci_low=acc - 5, ci_high=acc + 5,
    )  # fmt: skip


def record(name: str, results: list[MetricResult], tie_policy: str = "strict") -> RunRecord:
    benches = list(dict.fromkeys(r.benchmark for r in results))
    subsets = {b: sorted({r.subset for r in results if r.benchmark == b and r.subset[0] != "_"})
               for b in benches}  # fmt: skip
    return RunRecord(
        lexsem_version="0.0.test", run_id=f"{name}-0123456789", created_at="2026-01-01T00:00:00",
        model=ModelInfo(spec=f"test:{name}", name=name, fingerprint={"backend": "test"},
                        fingerprint_key="f" * 64, batch_size=8),
        benchmarks=[BenchmarkInfo(name=b, subsets=subsets[b], items={s: 100 for s in subsets[b]},
                                  files=[FileInfo(subset=s, file=None, sha256="0" * 64)
                                         for s in subsets[b]])
                    for b in benches],
        config=Config(tasks=sorted({r.task for r in results}), tie_policy=tie_policy, seed=0,
                      n_boot=100, confidence=0.95),
        results=results,
        timings=Timings(total_s=1.0, load_data_s=0.1, encode_s=0.5, cache_s=0.0, metrics_s=0.1,
                        n_texts_unique=0, n_texts_cached=0, n_texts_encoded=0),
    )  # fmt: skip


def bivlc_results(base: float) -> list[MetricResult]:
    out = []
    for k, m in enumerate(BIVLC_METRICS):
        subsets = ["replace_obj", "swap_att", "_replace", "_swap", "_micro", "_macro"]
        out += [result("bivlc", "bivlc", m, s, base + k + j / 10) for j, s in enumerate(subsets)]
    return out


def winoground_results(base: float) -> list[MetricResult]:
    return [
        result("winoground", "winoground", m, "all", base + k)
        for k, m in enumerate(("group", "text", "image"))
    ]


def items_run(name: str, hits: dict[tuple[str, str], bool], backend: str = "test") -> Run:
    """A run of task `tot` on benchmark `bench` with one hit per (subset, item id) of `hits`
    (`backend="human"`: a human study's run, which answers a sample of the items), its
    results counted from them (no intervals) and its files' sha256 all the same."""
    import pyarrow as pa

    subsets = list(dict.fromkeys(s for s, _ in hits))
    results = []
    for s in [*subsets, "_micro"]:
        mine = [h for (sub, _), h in hits.items() if s in (sub, "_micro")]
        results.append(
            MetricResult(benchmark="bench", task="tot", metric="tot", subset=s, n=len(mine),
                         hits=sum(mine), ties=0, accuracy=100 * sum(mine) / len(mine),
                         ci_low=None, ci_high=None)
        )  # fmt: skip
    rec = record(name, results)
    model = rec.model.model_copy(
        update={"fingerprint": {"backend": backend}, "fingerprint_key": (name * 64)[:64]}
    )
    rec = rec.model_copy(update={"model": model, "run_id": f"{name}-run"})
    items = pa.table(
        {
            "benchmark": ["bench"] * len(hits),
            "subset": [s for s, _ in hits],
            "item_id": [i for _, i in hits],
            "task": ["tot"] * len(hits),
            "metric": ["tot"] * len(hits),
            "hit": list(hits.values()),
            "tie": [False] * len(hits),
        }
    )
    return Run(rec, items)

"""Assemble the run record: provenance (lexsem version, data sha256s, model fingerprint,
settings, environment) around the results."""

from __future__ import annotations

import contextlib
import hashlib
import platform
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from lexsem._version import __version__
from lexsem.benchmarks.load import LoadedBenchmark
from lexsem.config import EvalConfig
from lexsem.credentials import redact, redacted
from lexsem.digests import file_sha256
from lexsem.results.schema import (
    REDUCED_PRECISION,
    REDUCED_PRECISION_NOTE,
    BenchmarkInfo,
    Config,
    DataNotice,
    FileInfo,
    MetricResult,
    ModelInfo,
    RunRecord,
    Timings,
)

# the packages whose versions change a run's numbers (tensors, tokenisers, image processing,
# weights' loading), recorded where installed
RECORDED_PACKAGES = (
    "numpy", "torch", "torchvision", "transformers", "tokenizers", "sentence-transformers",
    "open_clip_torch", "huggingface-hub", "pillow",
)  # fmt: skip


def checkout_lock() -> Path | None:
    """requirements.txt of the checkout lexsem runs from (an editable install of a clone), or
    None for an installed wheel."""
    root = Path(__file__).resolve().parents[3]  # <root>/src/lexsem/results/build.py
    lock = root / "requirements.txt"
    return lock if lock.is_file() and (root / "pyproject.toml").is_file() else None


def environment() -> dict[str, str]:
    """Python, platform, the versions of RECORDED_PACKAGES, and `lock_sha256`: the sha256 of
    the checkout's requirements.txt, which `make` installs exactly (docs/testing.md)."""
    env = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in RECORDED_PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            env[pkg] = metadata.version(pkg)
    lock = checkout_lock()
    if lock is not None:
        env["lock_sha256"] = file_sha256(lock)
    return env


def benchmark_info(bench: LoadedBenchmark, skipped: dict[str, list[str]]) -> BenchmarkInfo:
    return BenchmarkInfo(
        name=bench.spec.name,
        subsets=[s.spec.name for s in bench.subsets],
        items={s.spec.name: len(s.items) for s in bench.subsets},
        files=[FileInfo(**f) for f in bench.files()],
        dropped=bench.dropped(),
        skipped=skipped,
        origin=bench.spec.origin,
        notices=[
            DataNotice(kind=n.kind, message=n.message, subset=n.subset, ids=list(n.ids))
            for n in bench.notices
        ],
    )


def run_config(
    cfg: EvalConfig, tasks: list[str], images: dict[str, Any], *, choice: bool = False
) -> Config:
    """The run's settings; `choice`: it has multiple-choice tasks (their answer rule is
    recorded)."""
    return Config(
        tasks=sorted(set(tasks)),
        answer_rule=cfg.answer_rule if choice else None,
        images=images,
        tie_policy=cfg.tie_policy,
        seed=cfg.seed,
        n_boot=cfg.n_boot,
        confidence=cfg.confidence,
        evaluation=cfg.model_dump(mode="json"),
    )


def model_info(
    model: Any, spec: str, fingerprint: dict[str, Any], key: str, batch: int
) -> ModelInfo:
    """What the run record says of the model: its spec, name and fingerprint without URL
    credentials (`lexsem.credentials`)."""
    dtype = fingerprint.get("dtype")
    name = getattr(model, "name", spec)
    reason = getattr(model, "dtype_reason", None)
    reduced = isinstance(dtype, str) and dtype in REDUCED_PRECISION
    return ModelInfo(
        spec=redact(spec),
        name=redact(name) if isinstance(name, str) else name,
        fingerprint=redacted(fingerprint),
        fingerprint_key=key,
        device=getattr(model, "device", None),
        dtype=dtype if isinstance(dtype, str) else None,
        batch_size=batch,
        dtype_reason=reason if isinstance(reason, str) else None,
        dtype_note=REDUCED_PRECISION_NOTE.format(dtype=dtype) if reduced else None,
    )


def run_record(
    model: ModelInfo,
    benchmarks: list[BenchmarkInfo],
    config: Config,
    results: list[MetricResult],
    timings: Timings,
) -> RunRecord:
    # the run id: what was evaluated, on what data, how (not when, nor how long it took)
    settings = config.model_dump_json(exclude={"evaluation"})  # answer_rule where it has one
    ident = hashlib.sha256(
        (model.fingerprint_key + repr([b.model_dump() for b in benchmarks]) + settings).encode()
    ).hexdigest()[:16]
    return RunRecord(
        lexsem_version=__version__,
        run_id=ident,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        model=model,
        benchmarks=benchmarks,
        config=config,
        results=results,
        timings=timings,
        environment=environment(),
    )

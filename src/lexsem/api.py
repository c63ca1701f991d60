"""The Python API: `lexsem.evaluate(model, benchmarks, ...)` -> Run, a shortcut for
`Evaluator(EvalConfig(...)).run(model, out=...)` (see `lexsem.evaluator` and `lexsem.config`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lexsem.config import build_config
from lexsem.errors import LexsemError
from lexsem.results.run import Run


def evaluate(
    model: str | object,
    benchmarks: Sequence[str] | str,
    *,
    images: Any = None,
    out: str | Path | None = None,
    force: bool = False,
    **settings: Any,
) -> Run:
    """Evaluate a model on one or more benchmarks (`NAME`, `NAME/SUBSET[,SUBSET]`, or a user's
    file `FORMAT:PATH`).

    `model`: a spec string (`lexsem list models`) or an object implementing the text-encoder,
    image-encoder (with text encoder: a dual encoder), pair-scorer or text-scorer protocol.
    `settings` are the fields of `lexsem.config.EvalConfig` (tasks, data_dir, cache_dir,
    tie_policy, seed, n_boot, batch_size, device, dtype, coco_val2017, skip_bad_images, ...).
    `images`: an `ImageStore` to read images from (default: one built from the settings).
    Per-item scores, hits and ties are kept in the returned `Run`, also written to `out` (a
    folder; one already holding a run is replaced only with `force=True`, see
    docs/reliability.md).
    """
    from lexsem.evaluator import Evaluator

    selectors = [benchmarks] if isinstance(benchmarks, str) else list(benchmarks)
    if not selectors:
        raise LexsemError("no benchmark given")
    # one run: decoded images would never be used again (an Evaluator keeps them across runs)
    settings.setdefault("keep_decoded_mb", 0)
    config = build_config(benchmarks=selectors, **settings)
    return Evaluator(config, images=images).run(model, out=out, force=force)

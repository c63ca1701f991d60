"""Stage `baseline_scores`: a frozen build evaluated by given models, their scores in the data
card (docs/building.md, "Baselines in the data card").

A benchmark paper reports what a model that should not be able to solve the items scores on
them: SugarCrepe's blind text scorers (Vera, grammar, "SugarCrepe: Fixing Hackable Benchmarks
for Vision-Language Compositionality", §3), the blind language models of the linguistic-priors
paper, and BiVLC's artifact detectors ("BiVLC: Extending Vision-Language Compositionality
Evaluation with Text-to-Image Retrieval", §5.4). This stage runs after `freeze`: each model of
`models` is evaluated on ``build:DIR`` through the one evaluation path
(`Evaluator(config).run(model)`), its run folder kept under ``DIR/baselines/<n>-<name>``, and
its accuracies with their confidence intervals added to the card (``data_card.json`` under
``baselines``, and a table in ``README.md``). The card's files and their sha256 are not
changed. Rows are returned unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lexsem.atomic import atomic_open
from lexsem.benchmarks.frozen import BENCHMARK_DIR, CARD_JSON, CARD_MD
from lexsem.config import EvalConfig
from lexsem.construct.data_card import card_markdown
from lexsem.construct.stage import Stage, StageContext
from lexsem.credentials import redact, redacted
from lexsem.errors import LexsemError
from lexsem.jsonl import read_json

__all__ = ["BASELINES_DIR", "baseline_scores"]

BASELINES_DIR = "baselines"
MAX_MODELS = 50


def _folder_name(index: int, spec: str) -> str:
    """``NN-<spec with every character but letters, digits, '.', '-' as '_'>`` (bounded)."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", redact(spec)).strip("_.")[:60] or "model"
    return f"{index:02d}-{slug}"


def _rows_of(run: Any, spec: str, folder: str) -> list[dict[str, Any]]:
    model = run.record.model
    return [
        {
            "model": redact(spec),
            "fingerprint": redacted(model.fingerprint),
            "run": folder,
            "task": r.task,
            "metric": r.metric,
            "subset": r.subset,
            "n": r.n,
            "accuracy": r.accuracy,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
        }
        for r in run.record.results
    ]


def baseline_scores(
    rows: Any,
    ctx: StageContext | None,
    *,
    models: list[str],
    tasks: list[str] | None = None,
    batch_size: int = 64,
    n_boot: int = 1000,
    device: str | None = None,
) -> Any:
    """Evaluate the build's frozen benchmark with each of `models` (specs, e.g.
    ``"vera:liujch1998/vera"``, ``"lm:gpt2"``, ``"artifact:DIR"``) and record their scores in
    the data card (see the module doc). `tasks`: the tasks to run (default: every task each
    model can run); the bootstrap seed is the recipe's seed."""
    if ctx is None:
        raise LexsemError("baseline_scores: needs the build folder (a StageContext)")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models):
        raise LexsemError("baseline_scores: `models` is a non-empty list of model specs")
    if len(models) > MAX_MODELS:
        raise LexsemError(f"baseline_scores: at most {MAX_MODELS} models, got {len(models)}")
    card_path = ctx.out / BENCHMARK_DIR / CARD_JSON
    if not card_path.is_file():
        raise LexsemError(
            f"baseline_scores: no frozen benchmark in {ctx.out / BENCHMARK_DIR} "
            "(put the stage after `freeze`)"
        )
    from lexsem.evaluator import Evaluator

    config = EvalConfig(
        benchmarks=(f"build:{ctx.out}",),
        tasks=tuple(tasks) if tasks else None,
        batch_size=batch_size,
        n_boot=n_boot,
        seed=ctx.seed,
        device=device,
    )
    evaluator = Evaluator(config)
    found: list[dict[str, Any]] = []
    for index, spec in enumerate(models, 1):
        folder = f"{BASELINES_DIR}/{_folder_name(index, spec)}"
        ctx.log(f"{redact(spec)} -> {folder}")
        run = evaluator.run(spec, out=ctx.out / folder, force=True)
        found.extend(_rows_of(run, spec, folder))
        ctx.count("models evaluated")
    _write_card(card_path, found)
    return rows


def _write_card(card_path: Path, baselines: list[dict[str, Any]]) -> None:
    """The card with `baselines` (replacing an earlier stage's), JSON and Markdown, atomically."""
    card = read_json(card_path)
    card["baselines"] = baselines
    with atomic_open(card_path, encoding="utf-8") as fh:
        json.dump(card, fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
    with atomic_open(card_path.parent / CARD_MD, encoding="utf-8") as fh:
        fh.write(card_markdown(card))


STAGE = Stage("baseline_scores", baseline_scores)

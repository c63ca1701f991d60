"""Blind plausibility and grammaticality scores of positive and negative captions: a build stage.

"SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality" (Hsieh et al.,
2023), §3, scores each caption with a plausibility model (Vera) and a grammaticality model (a
CoLA classifier) and refines on the gaps; "BiVLC: Extending Vision-Language Compositionality
Evaluation with Text-to-Image Retrieval" (Miranda et al., 2024), §5.2, selects TROHN-Img's
negatives on the same scores (TROHN_Img_scoring.py: Vera's calibrated score, CoLA's softmax
probability of class 1; gap = positive − negative).

The stage scores through lexsem's own blind text scorers (`vera:` and `cola:` backends,
`lexsem.models.factory.load_text_scorer`): each distinct caption once, and adds ``vera_pos``,
``vera_neg``, ``vera_gap``, ``cola_pos``, ``cola_neg``, ``cola_gap`` (gaps as
`lexsem.construct.refine.adversarial_refine` reads them). Rejected rows get nulls.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.construct.stage import Stage, StageContext, accepted
from lexsem.errors import DataError

__all__ = ["SCORE_COLUMNS", "blind_scores"]

SCORE_COLUMNS = ("vera_pos", "vera_neg", "vera_gap", "cola_pos", "cola_neg", "cola_gap")


def _score(spec: str, texts: list[str], batch_size: int, device: str | None) -> dict[str, float]:
    from lexsem.models.factory import load_text_scorer

    scorer: Any = load_text_scorer(spec, device=device)
    values = np.asarray(scorer.score_texts(texts, batch_size=batch_size), dtype=np.float64)
    return dict(zip(texts, (float(v) for v in values), strict=True))


def blind_scores(
    rows: pa.Table,
    ctx: StageContext | None = None,
    *,
    vera: str = "vera:liujch1998/vera",
    cola: str = "cola:textattack/distilbert-base-uncased-CoLA",
    positive: str = "caption",
    negative: str = "negative_caption",
    batch_size: int = 32,
    device: str | None = None,
) -> pa.Table:
    """The rows with the six score columns (module docstring) for every accepted row. `vera`
    and `cola`: model specs (any `vera:` / `cola:` spec with its options; the defaults are the
    checkpoints of SugarCrepe's `text_model_eval.py`, lexsem's aliases `vera` and `cola`; BiVLC's
    TROHN scoring loads `cola:textattack/roberta-base-CoLA`); `device`: as for `load_model`."""
    for name in (positive, negative):
        if name not in rows.column_names:
            raise DataError(
                f"blind_scores: no column {name!r}; the rows have {', '.join(rows.column_names)}"
            )
    clash = [c for c in SCORE_COLUMNS if c in rows.column_names]
    if clash:
        raise DataError(f"blind_scores: the rows already have column(s) {clash}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise DataError(f"blind_scores: batch_size is a positive integer, got {batch_size!r}")
    keep = accepted(rows).to_pylist()
    pos, neg, ids = (
        rows[positive].to_pylist(),
        rows[negative].to_pylist(),
        rows["source_id"].to_pylist(),
    )
    for r, ok in enumerate(keep):
        if ok and not (isinstance(pos[r], str) and isinstance(neg[r], str)):
            raise DataError(
                f"blind_scores: {positive!r} and {negative!r} must be text", item=str(ids[r])
            )
    texts = sorted({t for r, ok in enumerate(keep) if ok for t in (pos[r], neg[r])})
    columns: dict[str, list[float | None]] = {c: [None] * rows.num_rows for c in SCORE_COLUMNS}
    if texts:
        for prefix, spec in (("vera", vera), ("cola", cola)):
            if ctx is not None:
                ctx.log(f"{prefix}: scoring {len(texts)} captions with {spec}")
            scores = _score(spec, texts, batch_size, device)
            for r, ok in enumerate(keep):
                if ok:
                    p, n = scores[pos[r]], scores[neg[r]]
                    columns[f"{prefix}_pos"][r] = p
                    columns[f"{prefix}_neg"][r] = n
                    columns[f"{prefix}_gap"][r] = p - n
        if ctx is not None:
            ctx.count("captions scored", len(texts))
    for name in SCORE_COLUMNS:
        rows = rows.append_column(name, pa.array(columns[name], pa.float64()))
    return rows


STAGE = Stage("blind_scores", blind_scores)

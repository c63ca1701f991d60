"""TROHN-Img's selection of negatives by blind scores: a build stage.

"BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval"
(Miranda et al., 2024), §5.2, step 1: the negative captions are scored with Vera and CoLA and
the instances "in the top 35 percentile" are kept. BiVLC's script
(IMirandaM/BiVLC, src/Training_data/TROHN_Img/TROHN_Img_best_selection.py) does it per
category, on the negative caption's own scores (not the gaps): the threshold of each score is
its 0.645 quantile among the category's rows (pandas' default, linear interpolation), and a row
is kept when every score is at or above its threshold (docs/fidelity.md, "Building: TROHN
selection and cleaning").

Rows not kept get `BELOW`; rejected rows take no part (the quantiles are over the accepted rows
of a group) and pass through unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.construct.stage import Stage, accepted, reject
from lexsem.errors import DataError

__all__ = ["BELOW", "score_percentile", "thresholds"]

BELOW = "below the score percentile"


def thresholds(values: Sequence[float], quantile: float) -> float:
    """The `quantile` of `values` with linear interpolation (pandas' `Series.quantile`)."""
    return float(np.quantile(np.asarray(values, dtype=np.float64), quantile, method="linear"))


def _numbers(rows: pa.Table, column: str, active: list[int], ids: list[Any]) -> list[float]:
    if column not in rows.column_names:
        raise DataError(
            f"score_percentile: no score column {column!r}; the rows have "
            f"{', '.join(rows.column_names)}"
        )
    values = rows[column].to_pylist()
    out = []
    for r in active:
        v = values[r]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise DataError(f"score_percentile: {column}={v!r} is not a number", item=str(ids[r]))
        out.append(float(v))
    return out


def score_percentile(
    rows: pa.Table,
    ctx: object | None = None,
    *,
    columns: Sequence[str] = ("vera_neg", "cola_neg"),
    quantile: float = 0.645,
    group_by: str | None = "category",
) -> pa.Table:
    """Reject the accepted rows below the `quantile` of any of `columns` in their group (each
    value of `group_by`; None: all rows one group). The defaults are BiVLC's: the negative's
    Vera and CoLA scores, 0.645, per category. `ctx` is not used."""
    del ctx
    if isinstance(columns, str) or not columns:
        raise DataError(f"score_percentile: columns is a list of column names, got {columns!r}")
    if (
        isinstance(quantile, bool)
        or not isinstance(quantile, (int, float))
        or not (0 <= quantile <= 1)
    ):
        raise DataError(f"score_percentile: quantile is a number in [0, 1], got {quantile!r}")
    if group_by is not None and group_by not in rows.column_names:
        raise DataError(f"score_percentile: no column {group_by!r} to group by")
    ids = rows["source_id"].to_pylist()
    keys = rows[group_by].to_pylist() if group_by is not None else [None] * rows.num_rows
    groups: dict[Any, list[int]] = {}
    for r, ok in enumerate(accepted(rows).to_pylist()):
        if ok:
            groups.setdefault(keys[r], []).append(r)
    reasons: list[str | None] = [None] * rows.num_rows
    for active in groups.values():
        for column in columns:
            values = _numbers(rows, column, active, ids)
            cut = thresholds(values, quantile)
            for r, v in zip(active, values, strict=True):
                if v < cut:
                    reasons[r] = BELOW
    return reject(rows, reasons)


STAGE = Stage("score_percentile", score_percentile)

"""SugarCrepe's adversarial refinement as a build stage.

"SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality" (Hsieh et al.,
2023), §3 (adversarial refinement): two blind text scorers, a plausibility model (Vera) and a
grammaticality model (a CoLA classifier), each give a score gap (positive caption's score minus
the negative's, both in [0, 1], so the gap lies in [-1, 1]). The refinement keeps a subset of
items on which neither scorer can tell positives from negatives: items are binned on a grid of
the two gaps and, in every cell, as many items are kept as the mirrored cell (both gaps'
signs flipped) holds, drawn at random from the fuller one. Items where exactly one gap is 0
are balanced on the other gap alone (10 bins per sign); items with both gaps 0 are all kept.

`refine_keep` is the procedure itself, on two gap sequences and a numpy `RandomState`: for the
same gaps and `RandomState(seed)` it keeps the same items, drawn in the same order, as
`adversarial_refine` of RAIVNLab/sugar-crepe `adversarial_refine.py` after
`np.random.seed(seed)`. That script raises `KeyError` on a gap of exactly +1 or -1 (its grid
has no cell for it); here such a gap falls in the outermost bin, the one holding [0.98, 1) on
the two-gap grid and [0.9, 1) on the one-gap bins (docs/fidelity.md, "Building: adversarial
refinement"). `adversarial_refine` is the stage: it marks the rows not kept as rejected and,
as BiVLC's TROHN_Img_best_selection.py (``data.iloc[keep]``), puts the kept rows first in the
order the refinement keeps them (setting `order`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.construct.stage import Stage
from lexsem.errors import DataError

# The reference's bin counts: the two-gap grid has GRID bins per sign on each axis, the one-gap
# balancing (one scorer's gap exactly 0) ONE_GAP_BINS bins per sign.
GRID = 50
ONE_GAP_BINS = 10

REJECTED = "rejected"
REASON = "adversarial_refinement"
ORDERS = ("refinement", "input")


def _bin(gap: float, n_bins: int) -> int:
    """The 0-based bin of |gap| among n_bins equal bins of [0, 1], with |gap| = 1 in the last."""
    return min(int(abs(gap) * n_bins), n_bins - 1)


def _take_balanced(
    keep: list[int], side: list[int], opposite: list[int], rng: np.random.RandomState
) -> None:
    """Keep the smaller of two mirrored cells whole and as many items drawn from the other.

    Ties keep `side` whole and draw from `opposite` (the reference's `else` branch); the draw
    is made even when it takes nothing, as it consumes the generator the same way."""
    if len(side) > len(opposite):
        keep.extend(opposite)
        keep.extend(int(i) for i in rng.choice(side, len(opposite), replace=False))
    else:
        keep.extend(side)
        keep.extend(int(i) for i in rng.choice(opposite, len(side), replace=False))


def _balance_one_gap(
    keep: list[int], indices: list[int], gaps: Sequence[float], rng: np.random.RandomState
) -> None:
    """Balance items whose other gap is 0 on `gaps` alone: bin by |gap|, positive against not."""
    positive: list[list[int]] = [[] for _ in range(ONE_GAP_BINS)]
    negative: list[list[int]] = [[] for _ in range(ONE_GAP_BINS)]
    for i in indices:
        gap = gaps[i]
        (positive if gap > 0 else negative)[_bin(gap, ONE_GAP_BINS)].append(i)
    for pos, neg in zip(positive, negative, strict=True):
        _take_balanced(keep, pos, neg, rng)


def refine_keep(
    model1_gaps: Sequence[float], model2_gaps: Sequence[float], rng: np.random.RandomState
) -> list[int]:
    """The positions kept by SugarCrepe's adversarial refinement, in the order it keeps them.

    Gaps must be finite and in [-1, 1] (checked by the caller). `rng` is consumed exactly as the
    reference consumes numpy's global generator, so `RandomState(seed)` reproduces the
    reference run after `np.random.seed(seed)`."""
    keep: list[int] = []
    # cells[(sign1, sign2)][bin1][bin2]: the items whose gaps have those signs and bins.
    cells: dict[tuple[int, int], list[list[list[int]]]] = {
        signs: [[[] for _ in range(GRID)] for _ in range(GRID)]
        for signs in ((1, 1), (-1, -1), (1, -1), (-1, 1))
    }
    model1_zero: list[int] = []
    model2_zero: list[int] = []
    for i, (gap1, gap2) in enumerate(zip(model1_gaps, model2_gaps, strict=True)):
        if gap1 == 0 and gap2 == 0:
            keep.append(i)
        elif gap1 == 0:
            model1_zero.append(i)
        elif gap2 == 0:
            model2_zero.append(i)
        else:
            signs = (1 if gap1 > 0 else -1, 1 if gap2 > 0 else -1)
            cells[signs][_bin(gap1, GRID)][_bin(gap2, GRID)].append(i)

    for b1 in range(GRID):
        for b2 in range(GRID):
            for signs in ((1, 1), (1, -1)):
                side = cells[signs][b1][b2]
                opposite = cells[(-signs[0], -signs[1])][b1][b2]
                if side and opposite:
                    _take_balanced(keep, side, opposite, rng)

    if model1_zero:
        _balance_one_gap(keep, model1_zero, model2_gaps, rng)
    if model2_zero:
        _balance_one_gap(keep, model2_zero, model1_gaps, rng)
    return keep


def _gaps(rows: pa.Table, column: str, active: list[int], ids: list[Any]) -> list[float]:
    """The active rows' gaps in `column` as floats, each checked to be a number in [-1, 1]."""
    if column not in rows.column_names:
        raise DataError(
            f"adversarial refinement needs a score-gap column {column!r}; "
            f"the rows have {', '.join(rows.column_names)}"
        )
    values = rows.column(column).to_pylist()
    out = []
    for r in active:
        value = values[r]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not -1 <= value <= 1
        ):
            raise DataError(
                f"score gap {column}={value!r} is not a number in [-1, 1]", item=str(ids[r])
            )
        out.append(float(value))
    return out


def adversarial_refine(
    rows: pa.Table,
    ctx: object | None = None,
    *,
    model1_gap: str = "vera_gap",
    model2_gap: str = "cola_gap",
    seed: int = 0,
    group_by: str | None = None,
    order: str = "refinement",
) -> pa.Table:
    """Mark the rows SugarCrepe's adversarial refinement does not keep as rejected.

    `model1_gap` and `model2_gap` name the columns holding the reference's `model1_score_gap`
    and `model2_score_gap` (the order matters for which items the draws pick). Rows already
    rejected by an earlier stage take no part and pass through unchanged. With `group_by`, each
    group (a SugarCrepe category such as `add_att`) is refined on its own, from a fresh
    `RandomState(seed)`, as the reference run once per category file after
    `np.random.seed(seed)`. `order`: ``"refinement"`` (BiVLC's TROHN_Img_best_selection.py,
    ``data.iloc[keep]``) puts the kept rows first, in the order the refinement keeps them (group
    after group, in the order each group first appears), then every other row in input order;
    ``"input"`` keeps the input order. Every column is kept. `ctx` is not used."""
    del ctx
    if order not in ORDERS:
        raise DataError(
            f"adversarial refinement: order is one of {', '.join(ORDERS)}, not {order!r}"
        )
    if group_by is not None and group_by not in rows.column_names:
        raise DataError(f"adversarial refinement: no column {group_by!r} to group by")
    ids = (
        rows.column("source_id").to_pylist()
        if "source_id" in rows.column_names
        else list(range(rows.num_rows))
    )
    if REJECTED in rows.column_names:
        rejected = rows.column(REJECTED).to_pylist()
    else:
        rejected = [None] * rows.num_rows
    groups: dict[Any, list[int]] = {}
    keys = rows.column(group_by).to_pylist() if group_by is not None else [None] * rows.num_rows
    for r in range(rows.num_rows):
        if rejected[r] is None:
            groups.setdefault(keys[r], []).append(r)

    out = list(rejected)
    kept_rows: list[int] = []
    for active in groups.values():
        gaps1 = _gaps(rows, model1_gap, active, ids)
        gaps2 = _gaps(rows, model2_gap, active, ids)
        kept = refine_keep(gaps1, gaps2, np.random.RandomState(seed))
        kept_rows.extend(active[position] for position in kept)
        for position in set(range(len(active))) - set(kept):
            out[active[position]] = REASON

    column = pa.array(out, type=pa.string())
    if REJECTED in rows.column_names:
        rows = rows.set_column(rows.column_names.index(REJECTED), REJECTED, column)
    else:
        rows = rows.append_column(REJECTED, column)
    if order == "input":
        return rows
    taken = set(kept_rows)
    rest = [r for r in range(rows.num_rows) if r not in taken]
    return rows.take(pa.array(kept_rows + rest, pa.int64()))


STAGE = Stage("adversarial_refine", adversarial_refine)

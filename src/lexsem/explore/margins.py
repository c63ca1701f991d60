"""The margin of an item on a metric: how far the right answer's score is ahead of the wrong
one's (negative: a miss by that much, zero: a tie), from the score columns a run keeps per item.

A margin exists where a metric compares similarities or scores directly:

- triplet, text (TOT / T2T): s(P1,P2) - max(s(P1,N), s(P2,N)) (SugarCrepe++, §3);
- triplet, image (ITT / I2T): min(s(I,P1), s(I,P2)) - s(I,N) (SugarCrepe++, §3), each half
  (P1 vs N, P2 vs N) its own difference;
- pair (SugarCrepe, its accuracy): s(I,pos) - s(I,neg);
- quad (BiVLC, Winoground): I2T min(s(I0,C0) - s(I0,C1), s(I1,C1) - s(I1,C0)), T2I
  min(s(I0,C0) - s(I1,C0), s(I1,C1) - s(I0,C1)), group the smaller of the two (BiVLC's four
  directional metrics have none here).

Other metrics (multiple choice, people's votes, blind scores) have none (NaN)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["margins"]

Cols = Mapping[str, np.ndarray]


def _text_triplet(c: Cols) -> np.ndarray:
    return c["s_p1_p2"] - np.maximum(c["s_p1_n"], c["s_p2_n"])


def _image_triplet(c: Cols) -> np.ndarray:
    return np.minimum(c["s_i_p1"], c["s_i_p2"]) - c["s_i_n"]


def _quad_i2t(c: Cols) -> np.ndarray:
    return np.minimum(c["s_i0_c0"] - c["s_i0_c1"], c["s_i1_c1"] - c["s_i1_c0"])


def _quad_t2i(c: Cols) -> np.ndarray:
    return np.minimum(c["s_i0_c0"] - c["s_i1_c0"], c["s_i1_c1"] - c["s_i0_c1"])


# metric -> (the columns it needs, the margin)
_RULES: dict[str, tuple[tuple[str, ...], Callable[[Cols], np.ndarray]]] = {
    "tot": (("s_p1_p2", "s_p1_n", "s_p2_n"), _text_triplet),
    "t2t": (("s_p1_p2", "s_p1_n", "s_p2_n"), _text_triplet),
    "itt": (("s_i_p1", "s_i_p2", "s_i_n"), _image_triplet),
    "i2t": (("s_i_p1", "s_i_p2", "s_i_n"), _image_triplet),
    "itt_p1n": (("s_i_p1", "s_i_n"), lambda c: c["s_i_p1"] - c["s_i_n"]),
    "itt_p2n": (("s_i_p2", "s_i_n"), lambda c: c["s_i_p2"] - c["s_i_n"]),
    "pair": (("s_i_pos", "s_i_neg"), lambda c: c["s_i_pos"] - c["s_i_neg"]),
    "quad_i2t": (("s_i0_c0", "s_i0_c1", "s_i1_c0", "s_i1_c1"), _quad_i2t),
    "quad_t2i": (("s_i0_c0", "s_i0_c1", "s_i1_c0", "s_i1_c1"), _quad_t2i),
    "quad_group": (
        ("s_i0_c0", "s_i0_c1", "s_i1_c0", "s_i1_c1"),
        lambda c: np.minimum(_quad_i2t(c), _quad_t2i(c)),
    ),
}
_QUAD = {"i2t": "quad_i2t", "text": "quad_i2t", "t2i": "quad_t2i", "image": "quad_t2i",
         "group": "quad_group"}  # fmt: skip


def _rule(metric: str, columns: Cols) -> str | None:
    if "s_i0_c0" in columns:
        return _QUAD.get(metric)
    if "s_i_pos" in columns:
        return "pair" if metric == "acc" else None
    return metric if metric in _RULES else None


def margins(metric: pa.Array | pa.ChunkedArray, columns: Cols) -> np.ndarray:
    """The margin of each row (float64, NaN where its metric has none): `metric` the rows'
    metric names, `columns` the run's score columns (float, NaN where a row lacks one)."""
    out = np.full(len(metric), np.nan)
    for name in pc.unique(metric).to_pylist():
        rule = _rule(str(name), columns)
        if rule is None:
            continue
        needs, fn = _RULES[rule]
        if not all(c in columns for c in needs):
            continue
        rows = pc.equal(metric, name).to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore"):
            out[rows] = fn({c: columns[c][rows] for c in needs})
    return out

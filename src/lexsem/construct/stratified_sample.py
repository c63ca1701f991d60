"""A seeded, stratified sample of a table's rows: a build stage that sizes a study.

A stage that mines candidates can make far more rows than people can validate (VISLA's spatial
split from Visual Spatial Reasoning captions: tens of thousands of swapped pairs, where the
paper's benchmark keeps 640; Dumpala et al., "VISLA Benchmark: Evaluating Embedding Sensitivity
to Semantic and Lexical Alterations", §3.3). `stratified_sample` keeps `target` of them, drawn
with the build's seed, each stratum (equal values of the `by` columns) keeping its share.

- Units: a row, or with `group` a group of rows (equal values of the `group` column, such as a
  pair's candidates), kept or dropped together; `target` counts units.
- Allocation: proportional, by largest remainder (Hamilton's method): a stratum of `n` of the
  `N` units has the quota ``target * n / N``; each stratum first gets the whole part of its
  quota, and the units left over go one each to the strata with the largest fractional
  parts. Equal fractional parts: the larger stratum first, then the stratum met first in row
  order. The arithmetic is exact (integers), so the allocation does not depend on rounding.
- Draw: within each stratum, in order of first appearance, ``numpy.random.default_rng(seed)
  .choice`` without replacement; the seed is the build's (`StageContext.seed`), so a re-run
  draws the same rows and another seed draws others.
- Rejected rows (a non-null ``rejected``) take no part: they are not drawn from, not counted
  in the strata, and pass through unchanged (the stage convention; the acceptance statistics
  keep the earlier stages' reasons). A group is live when any of its rows is; its stratum is
  that of its live rows, which must agree.
- Not drawn: dropped (not rejected), so later stages do no work for them. Fewer live units
  than `target`: all are kept. The output keeps the input's row order.

The stage counts (build.json, `StageContext.count`): ``target``, ``units live``, ``units
drawn``, ``rows drawn``, ``rows dropped`` and ``strata``; each stratum's draw is a progress line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.construct.stage import Columns, Stage, StageContext, accepted
from lexsem.errors import DataError

__all__ = ["MAX_TARGET", "STAGE", "allocate", "stratified_sample"]

NAME = "stratified_sample"
#: The largest `target` accepted: a study of more rows than this is no study people can do.
MAX_TARGET = 10_000_000


def allocate(sizes: Sequence[int], target: int) -> list[int]:
    """How many units each stratum of `sizes` keeps of `target` in all: proportional
    allocation with largest-remainder rounding (the module's doc); all of them when `target`
    is at least their sum."""
    total = sum(sizes)
    if target >= total:
        return list(sizes)
    whole = [target * n // total for n in sizes]
    left = target - sum(whole)
    # remainder numerators (over `total`), larger first; ties: larger stratum, then first met
    order = sorted(range(len(sizes)), key=lambda i: (-(target * sizes[i] % total), -sizes[i], i))
    for i in order[:left]:
        whole[i] += 1
    return whole


def _names(value: Any, setting: str) -> list[str]:
    """The column names a setting gives (one name or a list of them)."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(c, str) and c for c in names):
        raise DataError(f"{NAME}: {setting} is a column name or a list of them, got {value!r}")
    return list(names)


def _check_target(target: Any) -> int:
    if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= MAX_TARGET:
        raise DataError(
            f"{NAME}: target is the number of rows (or groups) to keep, an integer from 1 to "
            f"{MAX_TARGET:,}, got {target!r}"
        )
    return target


def _check_column(rows: pa.Table, column: str, setting: str) -> None:
    if column not in rows.column_names:
        raise DataError(
            f"{NAME}: no column {column!r} (setting `{setting}`); the rows have "
            f"{', '.join(rows.column_names)}"
        )


def _units(
    rows: pa.Table, by: list[str], group: str | None
) -> tuple[list[list[int]], list[tuple[Any, ...]]]:
    """The live units (each a list of row indices) in order of first row, and each unit's
    stratum key (its `by` values)."""
    live = accepted(rows).to_pylist()
    values = [rows[c].to_pylist() for c in by]
    keys = list(zip(*values, strict=True)) if by else [()] * rows.num_rows
    groups = rows[group].to_pylist() if group is not None else list(range(rows.num_rows))
    members: dict[Any, list[int]] = {}
    for r in range(rows.num_rows):
        if live[r]:
            members.setdefault(groups[r], []).append(r)
    units, strata = list(members.values()), []
    for unit in units:
        key = keys[unit[0]]
        if any(keys[r] != key for r in unit):
            raise DataError(
                f"{NAME}: the rows of group {group}={groups[unit[0]]!r} differ in "
                f"{', '.join(by)}; a group is drawn whole, in one stratum"
            )
        strata.append(key)
    return units, strata


def stratified_sample(
    rows: pa.Table,
    ctx: StageContext | None = None,
    *,
    target: int,
    by: str | Sequence[str] = (),
    group: str | None = None,
) -> pa.Table:
    """`target` live rows (or, with `group`, groups of rows) of `rows`, drawn with the build's
    seed so that each stratum of the `by` columns (none: one stratum) keeps its share, the
    rejected rows passed through, the input's row order kept (the module's doc)."""
    target = _check_target(target)
    columns = _names(by, "by")
    if group is not None and (not isinstance(group, str) or not group):
        raise DataError(f"{NAME}: group is a column name, got {group!r}")
    for column in columns:
        _check_column(rows, column, "by")
    if group is not None:
        _check_column(rows, group, "group")
    units, strata = _units(rows, columns, group)
    by_stratum: dict[tuple[Any, ...], list[int]] = {}
    for u, key in enumerate(strata):
        by_stratum.setdefault(key, []).append(u)
    keys = list(by_stratum)
    counts = allocate([len(by_stratum[k]) for k in keys], target)
    rng = np.random.default_rng(ctx.seed if ctx is not None else 0)
    keep = np.zeros(rows.num_rows, dtype=bool)
    keep[~np.asarray(accepted(rows).to_numpy(zero_copy_only=False), dtype=bool)] = True
    drawn_units = drawn_rows = 0
    for key, k in zip(keys, counts, strict=True):
        members = by_stratum[key]
        picked = rng.choice(len(members), size=k, replace=False) if k < len(members) else None
        chosen = members if picked is None else [members[i] for i in sorted(picked.tolist())]
        for u in chosen:
            keep[units[u]] = True
            drawn_rows += len(units[u])
        drawn_units += len(chosen)
        if ctx is not None and columns:
            named = ", ".join(f"{c}={v}" for c, v in zip(columns, key, strict=True))
            ctx.count(f"drawn where {named}", len(chosen))
    if ctx is not None:
        ctx.count("target", target)
        ctx.count("units live", len(units))
        ctx.count("units drawn", drawn_units)
        ctx.count("rows drawn", drawn_rows)
        ctx.count("rows dropped", int(rows.num_rows - keep.sum()))
        ctx.count("strata", len(keys))
        unit = "groups" if group is not None else "rows"
        ctx.log(f"drew {drawn_units} of {len(units)} {unit} (target {target}) in {len(keys)} "
                f"strata")  # fmt: skip
    return rows.filter(pa.array(keep))


def _columns(have: frozenset[str], *, by: Any = (), group: Any = None, **_: Any) -> Columns:
    """The columns the stage reads (`by`, `group`); it adds none."""
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else []
    reads = {("by" if len(names) == 1 else f"by[{i}]"): c for i, c in enumerate(names)}
    if isinstance(group, str):
        reads["group"] = group
    return Columns({k: v for k, v in reads.items() if isinstance(v, str)})


STAGE = Stage(NAME, stratified_sample, columns=_columns, target="target")

"""Per-item golden tables: stored once, compared exactly where exact and with tolerance on floats.

A golden table is one parquet file per case: its columns and its rows, in the order the
evaluator wrote them, every float at full precision (float32 where that loses nothing). A run's
items match it when the columns, the row count and row order, and every non-float cell (item
ids, hits, ties, counts, answer texts) are equal, and every float cell is within
`FP32_RTOL` of the stored one relative to max(|stored|, 1) (`builders.numeric`; scores are
cosines, probabilities, log-probs or hashes of size about 1 or more).

A hit or tie decided by two scores that are within twice that tolerance of each other is
*fragile*: another CPU's fp32 kernels may flip it. A flipped fragile row is reported (a
warning, listed in the test output), not a failure; any other flip is a failure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from builders.numeric import FP32_RTOL, relative_error


class FragileHitWarning(UserWarning):
    """A hit or tie that flipped against its golden table, decided by two scores that tie."""


# the cells a fragile row may flip; every other non-float cell must be equal
DECIDED = ("hit", "tie")
KEY = ("subset", "item_id", "task", "metric")  # what names a row in a message
SCALE = 1.0


def table_rows(table: Any) -> tuple[list[str], list[list[Any]]]:
    """A pyarrow table's column names and rows (lists), in its order."""
    columns = list(table.column_names)
    return columns, [[r[c] for c in columns] for r in table.to_pylist()]


def _lossless_float32(table: Any) -> Any:
    """Float64 columns whose every value is a float32 stored as float32 (half the bytes)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_float64(field.type):
            values = table.column(i).to_numpy(zero_copy_only=False).astype(np.float64)
            if np.array_equal(values.astype(np.float32).astype(np.float64), values, equal_nan=True):
                table = table.set_column(i, field.name, table.column(i).cast(pa.float32()))
    return table


def write_golden(path: Path, table: Any) -> None:
    """Store `table` at full precision: parquet, floats byte-stream-split, zstd."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _lossless_float32(table.replace_schema_metadata(None))
    floats = [f.name for f in table.schema if pa.types.is_floating(f.type)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table,
        path,
        compression="zstd",
        compression_level=22,
        use_dictionary=[c for c in table.column_names if c not in floats],
        use_byte_stream_split=floats,
    )


def read_golden(path: Path) -> tuple[list[str], list[list[Any]]]:
    import pyarrow.parquet as pq

    return table_rows(pq.read_table(path))


def _is_float(v: Any) -> bool:
    return isinstance(v, float)


def _fragile(row: list[Any], float_idx: list[int]) -> bool:
    """Two of the row's scores are within 2 * FP32_RTOL of each other (relative to their size)."""
    vals = [row[i] for i in float_idx if row[i] is not None and not math.isnan(row[i])]
    for i, a in enumerate(vals):
        for b in vals[i + 1 :]:
            if abs(a - b) <= 2 * FP32_RTOL * max(abs(a), abs(b), SCALE):
                return True
    return False


def compare_to_golden(table: Any, path: Path) -> list[str]:
    """Assert that `table` matches the golden table at `path`; return its fragile flips.

    Raises AssertionError naming the first row and column that differ beyond the rule above.
    """
    want_cols, want_rows = read_golden(path)
    return compare_rows(table_rows(table), (want_cols, want_rows), path.name)


def compare_tables(table: Any, expected: Any, name: str) -> list[str]:
    """The same rule between two per-item tables computed in different processes (a sweep's
    Ray workers or spread actors against one process): return the fragile flips."""
    return compare_rows(table_rows(table), table_rows(expected), name)


def compare_rows(
    got_table: tuple[list[str], list[list[Any]]],
    want_table: tuple[list[str], list[list[Any]]],
    name: str,
) -> list[str]:
    """Assert the rows of `got_table` match `want_table` under the rule above; return the
    fragile flips."""
    cols, rows = got_table
    want_cols, want_rows = want_table
    assert cols == want_cols, f"{name}: columns {cols} != golden {want_cols}"
    assert len(rows) == len(want_rows), f"{name}: {len(rows)} rows != golden {len(want_rows)}"
    float_idx = [
        j
        for j in range(len(cols))
        if any(_is_float(r[j]) for r in want_rows) and cols[j] not in DECIDED
    ]
    decided = [cols.index(c) for c in DECIDED if c in cols]
    flips: list[str] = []
    for n, (got, want) in enumerate(zip(rows, want_rows, strict=True)):
        key = ", ".join(str(got[cols.index(c)]) for c in KEY if c in cols)
        where = f"{name} row {n} ({key})"
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            if j in float_idx or j in decided:
                continue
            assert g == w, f"{where}: {cols[j]} = {g!r}, golden {w!r}"
        for j in float_idx:
            g, w = got[j], want[j]
            if g is None or w is None:
                assert g is None and w is None, f"{where}: {cols[j]} = {g!r}, golden {w!r}"
                continue
            ratio = float(relative_error(np.float64(g), np.float64(w), scale=SCALE))
            assert ratio <= FP32_RTOL, (
                f"{where}: {cols[j]} = {g!r}, golden {w!r} (relative error {ratio:.3g} > "
                f"{FP32_RTOL:g})"
            )
        changed = [cols[j] for j in decided if got[j] != want[j]]
        if changed:
            assert _fragile(want, float_idx), (
                f"{where}: {', '.join(changed)} changed ({[got[j] for j in decided]} vs golden "
                f"{[want[j] for j in decided]}) and its scores are not within the tolerance"
            )
            flips.append(f"{where}: {', '.join(changed)} flipped (fragile: two scores tie)")
    return flips

"""`builders.golden_items.compare_to_golden`: exact cells exact, float scores within the fp32
tolerance, a flipped hit reported as fragile only when its two scores tie within it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from builders.golden_items import compare_to_golden, read_golden, write_golden
from builders.numeric import FP32_RTOL

pytestmark = pytest.mark.numeric


def items(s_pos: list[float], s_neg: list[float], hit: list[bool] | None = None) -> pa.Table:
    n = len(s_pos)
    return pa.table({
        "benchmark": ["b"] * n,
        "subset": ["s"] * n,
        "item_id": [str(i) for i in range(n)],
        "task": ["itt"] * n,
        "metric": ["itt"] * n,
        "hit": hit if hit is not None else [p > q for p, q in zip(s_pos, s_neg, strict=True)],
        "tie": [False] * n,
        "s_pos": pa.array(s_pos, pa.float32()),
        "s_neg": pa.array(s_neg, pa.float32()),
    })  # fmt: skip


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "case.parquet"
    write_golden(path, items([0.5, 0.25, 0.3000001], [0.25, 0.5, 0.3]))
    return path


def test_the_stored_table_keeps_every_float_bit(golden: Path) -> None:
    cols, rows = read_golden(golden)
    assert cols[-2:] == ["s_pos", "s_neg"]
    assert rows[2][-2:] == [float(pa.scalar(0.3000001, pa.float32()).as_py()), 0.30000001192092896]
    assert compare_to_golden(items([0.5, 0.25, 0.3000001], [0.25, 0.5, 0.3]), golden) == []


def test_scores_within_the_tolerance_pass(golden: Path) -> None:
    moved = 0.5 * (1 + FP32_RTOL / 2)
    assert compare_to_golden(items([moved, 0.25, 0.3000001], [0.25, 0.5, 0.3]), golden) == []


def test_a_score_beyond_the_tolerance_fails(golden: Path) -> None:
    with pytest.raises(AssertionError, match="s_pos"):
        compare_to_golden(items([0.5 + 1e-3, 0.25, 0.3000001], [0.25, 0.5, 0.3]), golden)


def test_an_exact_cell_must_be_equal(golden: Path, tmp_path: Path) -> None:
    table = items([0.5, 0.25, 0.3000001], [0.25, 0.5, 0.3])
    table = table.set_column(2, "item_id", pa.array(["0", "1", "x"]))
    with pytest.raises(AssertionError, match="item_id"):
        compare_to_golden(table, golden)
    with pytest.raises(AssertionError, match="rows"):
        compare_to_golden(items([0.5, 0.25], [0.25, 0.5]), golden)


def test_a_flipped_hit_is_fragile_only_when_its_scores_tie(golden: Path) -> None:
    flipped = items([0.5, 0.25, 0.3000001], [0.25, 0.5, 0.3], hit=[True, False, False])
    flips = compare_to_golden(flipped, golden)
    assert len(flips) == 1 and "row 2" in flips[0] and "fragile" in flips[0]
    with pytest.raises(AssertionError, match="not within the tolerance"):
        compare_to_golden(items([0.5, 0.25, 0.3000001], [0.25, 0.5, 0.3], [False] * 3), golden)

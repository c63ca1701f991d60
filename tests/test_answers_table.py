"""The answers-table contract (`lexsem.results.answers_table`): its reader, the column and type
check, each item's answers of one kind, and the one majority vote with each caller's tie rule
(docs/human-studies.md: a build's fold-back counts a tie against keeping the row; a human run's
strict policy counts it as a miss, its lenient one as a hit)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builders.answers_table import answer, table
from lexsem.errors import DataError
from lexsem.results.answers_table import (
    ANSWERS_SCHEMA,
    answers_by_item,
    check_columns,
    majority,
    read_answers,
)


@pytest.mark.parametrize(
    ("choices", "on_tie", "expected"),
    [
        (["a", "b", "a"], None, ("a", False)),
        (["b", "a", "a", "b"], None, ("b", True)),  # the first given of the tied ones
        (["image0", "image1"], "None", ("None", True)),  # best image: no good image
        ([True, False], False, (False, True)),  # human run, strict: a tie is a miss
        ([True, False], True, (True, True)),  # lenient: a hit
        ([True, True, False], False, (True, False)),
        (["keep", "rejected"], "disagreement", ("disagreement", True)),
    ],
)
def test_majority_and_the_callers_tie_rule(
    choices: list[object], on_tie: object, expected: tuple[object, bool]
) -> None:
    got = majority(choices) if on_tie is None else majority(choices, on_tie=on_tie)
    assert got == expected


def test_majority_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no choices"):
        majority([])


def test_the_reader_gives_the_same_sha256_for_a_file_as_its_bytes(tmp_path: Path) -> None:
    t = table([answer("tot", "i1", "a", "n"), answer("tot", "i1", "b", "p1")])
    path = tmp_path / "answers.parquet"
    pq.write_table(t, path)
    got, name, sha = read_answers(path)
    import hashlib

    assert got.to_pylist() == t.to_pylist() and name == "answers.parquet"
    assert sha == hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(DataError, match="no such answers file"):
        read_answers(tmp_path / "missing.parquet")


def test_a_column_of_another_type_is_refused_naming_the_file() -> None:
    t = table([answer("tot", "i1", "a", "n")])
    check_columns(t, "a.parquet", ["kind", "practice", "seconds"])
    bad = t.set_column(t.column_names.index("practice"), "practice", pa.array(["no"]))
    with pytest.raises(DataError, match=r"a.parquet: .*column 'practice' holds string, not bool"):
        check_columns(bad, "a.parquet", ["practice"])
    ints = t.set_column(t.column_names.index("seconds"), "seconds", pa.array([3], pa.int32()))
    check_columns(ints, "a.parquet", ["seconds"])  # a whole number of seconds is a number
    assert ANSWERS_SCHEMA.field("options").type == pa.list_(pa.string())


def test_answers_by_item_leaves_out_practice_and_skips_and_refuses_a_second_answer() -> None:
    rows = [
        answer("tot", "i1", "a", "n"),
        answer("tot", "i1", "b", "skip"),
        answer("tot", "i2", "a", "p1", practice=True),
        answer("itt", "i1", "a", "n"),
        answer("tot", "i2", "b", "p2"),
    ]
    got = answers_by_item(table(rows), "t.parquet", "tot")
    assert {k: [(a.row, a.annotator, a.answer) for a in v] for k, v in got.items()} == {
        "i1": [(1, "a", "n")],
        "i2": [(5, "b", "p2")],
    }
    twice = table([*rows, answer("tot", "i1", "a", "p1")])
    with pytest.raises(
        DataError, match=r"t.parquet, row 6: item 'i1': annotator a answered it again \(first on"
    ):
        answers_by_item(twice, "t.parquet", "tot")

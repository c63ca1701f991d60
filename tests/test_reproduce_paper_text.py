"""Every number a built-in paper table stores is the paper's: read from the papers' texts in
`$LEXSEM_PAPERS` (docs/testing.md; a table whose paper is not there skips).

A paper's text prints a table either one model per line (the row's numbers follow each other
on one line) or, where the PDF's columns were read in blocks, one line per group of models with
one tab-separated field per column holding that column's numbers for the group's models in
order. Rows: every row's stored numbers, in column order, are a run of consecutive numbers of
one line. Blocks (`BLOCKS`): every column's stored numbers, in row order, are consecutive
tab-separated fields of the text, each field's numbers a run of that column. A number equals
the printed one as a float (`44.3` is `44.30`; `9.263` is stored as printed); "-" is no cell.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import pytest

from lexsem.report.paper.catalog import get_table, table_names
from lexsem.report.paper.facts import Cell, PaperTable

# tables whose text reads column by column in blocks of rows (SugarCrepe++ Tables 2-4)
BLOCKS = {"scpp_table2", "scpp_table3", "scpp_table4", "scpp_table19"}
# the places of the paper's columns that a block table does not store (Table 19: SugarCrepe's
# Avg, the mean of 5 of its 7 subsets, which no run records)
UNSTORED = {"scpp_table19": (5,)}
Fit = Callable[[Sequence[float], Sequence[float]], int]
# tables whose rows join two of the paper's tables (VISLA: T2T from Table 2, P1-N, P2-N from 3)
RUNS = {"visla_generic": 2, "visla_spatial": 2}
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _squash(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.casefold())


@cache
def _texts() -> tuple[str, ...]:
    folder = os.environ.get("LEXSEM_PAPERS")  # the papers' texts (docs/testing.md)
    if not folder or not Path(folder).is_dir():
        return ()
    paths = sorted(Path(folder).glob("*.txt"))
    return tuple(p.read_text(encoding="utf-8", errors="replace") for p in paths)


def _paper_texts(title: str) -> list[str]:
    """The texts whose opening names `title` (a paper may be there in two versions)."""
    return [t for t in _texts() if _squash(title) in _squash(t[:2000])]


def _numbers(text: str) -> list[float]:
    return [float(n) for n in NUMBER.findall(text)]


def _cover(values: Sequence[float], pieces: Sequence[Sequence[float]], fits: Fit) -> list[int]:
    """The lengths of the consecutive pieces that cover `values`, each the longest that
    `fits` at its point (the fewest pieces, as every start of a fitting piece fits too); a
    last length 0 where they stop covering."""
    at, out = 0, []
    while at < len(values):
        out.append(max((fits(p, values[at:]) for p in pieces), default=0))
        if out[-1] == 0:
            break
        at += out[-1]
    return out


def _longest_run(line: Sequence[float], values: Sequence[float]) -> int:
    """The longest start of `values` that is a run of `line`."""
    best = 0
    for i in range(len(line)):
        k = 0
        while k < len(values) and i + k < len(line) and line[i + k] == values[k]:
            k += 1
        best = max(best, k)
    return best


def _whole_field(field: Sequence[float], values: Sequence[float]) -> int:
    """len(field) where `values` start with the whole field, else 0."""
    return len(field) if list(values[: len(field)]) == list(field) else 0


def row_mismatches(table: PaperTable, text: str) -> list[str]:
    """The rows whose numbers, in column order, are not one run of one of the paper's lines
    (or `RUNS` runs, for a table that joins the paper's tables)."""
    lines = [n for line in text.splitlines() if (n := _numbers(line))]
    out = []
    for row in table.rows:
        values = [c.published for c in table.cells_of(row.name)]
        pieces = _cover(values, lines, _longest_run)
        if pieces[-1] == 0 or len(pieces) > RUNS.get(table.name, 1):
            out.append(f"{table.name}: row {row.name!r} {values} is not a row of the paper "
                       f"(runs of its lines: {pieces})")  # fmt: skip
    return out


def _fields(text: str) -> list[list[list[float]]]:
    """Per column position (0: the first field after a line's label), the fields of the text
    that hold numbers there."""
    out: list[list[list[float]]] = []
    for line in text.splitlines():
        numeric = [n for f in line.split("\t")[1:] if (n := _numbers(f))]
        for i, n in enumerate(numeric):
            out += [[] for _ in range(i + 1 - len(out))]
            out[i].append(n)
    return out


def block_mismatches(table: PaperTable, text: str) -> list[str]:
    """The columns whose numbers, in row order, are not consecutive tab-separated fields at the
    column's place in the paper's lines."""
    fields = _fields(text)
    # the columns in the paper's order: a full row's (table.columns() puts first those of
    # the first row, which may lack some)
    full = max((table.cells_of(r.name) for r in table.rows), key=len)
    columns = list(dict.fromkeys([c.column for c in full] + table.columns()))
    skip = UNSTORED.get(table.name, ())
    places = [p for p in range(len(columns) + len(skip)) if p not in skip]
    out = []
    for i, col in zip(places, columns, strict=True):
        values = [c.published for c in table.cells if c.column == col]
        pieces = _cover(values, fields[i] if i < len(fields) else [], _whole_field)
        if pieces[-1] == 0:
            at = sum(pieces)
            out.append(f"{table.name}: column {col.header!r}: {values[at]} (row {at + 1} of "
                       "the column) is not where the paper prints it")  # fmt: skip
    return out


def mismatches(table: PaperTable, text: str) -> list[str]:
    return (block_mismatches if table.name in BLOCKS else row_mismatches)(table, text)


@pytest.mark.parametrize("name", table_names())
def test_every_stored_number_is_the_papers(name: str) -> None:
    table = get_table(name)
    texts = _paper_texts(table.paper)
    if not texts:
        pytest.skip(f"the text of {table.paper!r} is not in $LEXSEM_PAPERS (docs/testing.md)")
    # the paper's number in one of its texts (VISLA's two versions print the same tables)
    found = [mismatches(table, t) for t in texts]
    assert min(found, key=len) == [], "\n".join(min(found, key=len))


@pytest.mark.parametrize(
    "name", ["bivlc_table4", "scpp_table2", "scpp_table3", "scpp_table4", "scpp_table19"]
)
def test_a_changed_number_or_swapped_cells_are_caught(name: str) -> None:
    table = get_table(name)
    texts = _paper_texts(table.paper)
    if not texts:
        pytest.skip(f"the text of {table.paper!r} is not in $LEXSEM_PAPERS (docs/testing.md)")
    cells = list(table.cells)
    first = cells[0]
    changed = [Cell(model=first.model, column=first.column, published=first.published + 0.01),
               *cells[1:]]  # fmt: skip
    assert mismatches(table.model_copy(update={"cells": tuple(changed)}), texts[0])
    a, b = cells[0], cells[1]  # two cells of one row, their numbers swapped
    swapped = [a.model_copy(update={"published": b.published}),
               b.model_copy(update={"published": a.published}), *cells[2:]]  # fmt: skip
    assert a.published != b.published
    assert mismatches(table.model_copy(update={"cells": tuple(swapped)}), texts[0])

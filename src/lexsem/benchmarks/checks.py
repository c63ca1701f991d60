"""Checks on what a benchmark loader returned: data that is not what it claims is said so, loudly.

Errors (`DataError`, when loading for evaluation, `strict`):
- two items of one subset with the same id, or an empty id (names the file and both items);
- a subset the user named (`NAME/SUBSET`) that holds no item;
- a selection that holds no item at all (an empty file, every row incomplete, ...).

Warnings (`DataWarning`, and a `Notice` recorded in the run):
- `row_count`: a subset with another number of rows than the published data (a partial
  snapshot: 20 of Winoground's 400);
- `empty_subset`: an empty subset of a whole-benchmark selection, left out (the averages are
  over the other subsets);
- `dropped_rows`: incomplete items left out of a source that is not a pinned public file (for
  pinned files the left-out rows are known and documented, e.g. VISLA spatial's 12);
- `unknown_rows`: rows of a type that is none of the benchmark's subsets (BiVLC), left out.

`lexsem validate` loads with `strict=False`: nothing is raised, warned or left out; it reports
what it finds itself.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from lexsem.benchmarks.base import Benchmark, LoadedSubset
from lexsem.errors import DataError, DataWarning

SHOWN_IDS = 5


@dataclass(frozen=True)
class Notice:
    """Something about the data that every reader of the run must see."""

    kind: str  # "row_count", "empty_subset", "dropped_rows" or "unknown_rows"
    message: str
    subset: str | None = None
    ids: tuple[str, ...] = ()


def shown(ids: Sequence[str]) -> str:
    """The first few ids, for a message (all of them are recorded in the run)."""
    head = ", ".join(ids[:SHOWN_IDS])
    return head + (f", ... ({len(ids)} in all)" if len(ids) > SHOWN_IDS else "")


def check_ids(bench: Benchmark, sub: LoadedSubset) -> None:
    """`DataError` for an empty or repeated item id within the subset."""
    first: dict[str, int] = {}
    for pos, it in enumerate(sub.items):
        where = f"{bench.name}/{sub.spec.name}"
        if not it.id.strip():
            raise DataError(f"{where}: item #{pos} has an empty id", file=sub.file)
        if it.id in first:
            raise DataError(
                f"{where}: duplicate item id {it.id!r} (items #{first[it.id]} and #{pos}, "
                "counted in file order from 0); every item of a subset needs its own id",
                file=sub.file,
                item=it.id,
            )
        first[it.id] = pos


_EXPECTED = {
    "files": "the pinned public file has",
    "hf": "the published dataset has",
    "generated": "the generator makes",
}


def row_count_notices(bench: Benchmark, subsets: Sequence[LoadedSubset]) -> list[Notice]:
    """A notice per non-empty subset whose row count is not the published one."""
    what = _EXPECTED.get(bench.origin)
    out = []
    for s in subsets:
        expected, rows = s.spec.expected_items, len(s.items) + len(s.dropped)
        if what is None or expected <= 0 or not s.items or rows == expected:
            continue
        tail = " and are not comparable with published numbers" if rows < expected else ""
        out.append(
            Notice(
                "row_count",
                f"{bench.name}/{s.spec.name}: {_rows(rows)} read from "
                f"{s.file or 'the generator'}, but {what} {expected}: its results are over "
                f"{_rows(rows)} only{tail}",
                s.spec.name,
            )
        )
    return out


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def dropped_notices(bench: Benchmark, subsets: Sequence[LoadedSubset]) -> list[Notice]:
    """Incomplete items left out of a source that is not a pinned public file."""
    if bench.origin == "files":
        return []
    return [
        Notice(
            "dropped_rows",
            f"{bench.name}/{s.spec.name}: {len(s.dropped)} incomplete item(s) (an empty text) "
            f"left out of {s.file}: ids {shown(s.dropped)}",
            s.spec.name,
            tuple(s.dropped),
        )
        for s in subsets
        if s.dropped
    ]


def unknown_rows(subsets: Sequence[LoadedSubset]) -> dict[str, str]:
    """Id -> type of the source rows that belong to no subset (the same for every subset of one
    source)."""
    out: dict[str, str] = {}
    for s in subsets:
        out.update(s.unassigned)
    return out


def unknown_rows_notices(bench: Benchmark, rows: dict[str, str]) -> list[Notice]:
    if not rows:
        return []
    types = ", ".join(f"{t!r} ({n})" for t, n in Counter(rows.values()).most_common())
    ids = list(rows)
    return [
        Notice(
            "unknown_rows",
            f"{bench.name}: {len(ids)} row(s) of a type that is none of its subsets "
            f"({', '.join(s.name for s in bench.subsets)}) left out: types {types}; "
            f"ids {shown(ids)}",
            None,
            tuple(ids),
        )
    ]


def keep_nonempty(
    bench: Benchmark, subsets: Sequence[LoadedSubset], *, named: bool
) -> tuple[list[LoadedSubset], list[Notice]]:
    """The subsets holding items, and a notice per empty one left out. Errors when the
    selection holds no item, or when a subset the user named is empty."""
    kept = [s for s in subsets if s.items]
    empty = [s for s in subsets if not s.items]
    if named and empty:  # before "no items at all": the file holds rows of other subsets
        s = empty[0]
        raise DataError(
            f"{bench.name}/{s.spec.name}: the subset you selected holds no items{_published(s)}",
            file=s.file,
        )
    if not kept:
        files = ", ".join(dict.fromkeys(s.file or "the generator" for s in subsets))
        dropped = sum(len(s.dropped) for s in subsets)
        why = f" ({dropped} incomplete row(s) left out)" if dropped else ""
        raise DataError(f"{bench.name}: no items to evaluate in {files or 'its files'}{why}")
    notices = [
        Notice(
            "empty_subset",
            f"{bench.name}/{s.spec.name}: no items{_published(s)}; left out, so the averages "
            f"are over {len(kept)} of {len(subsets)} subsets",
            s.spec.name,
        )
        for s in empty
    ]
    return kept, notices


def _published(s: LoadedSubset) -> str:
    n = s.spec.expected_items
    return f" (the published data has {n})" if n > 0 else ""


def warn(notices: Sequence[Notice]) -> None:
    for n in notices:
        warnings.warn(n.message, DataWarning, stacklevel=3)

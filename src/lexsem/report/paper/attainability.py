"""Which published numbers no k/n over the public items can give.

A published accuracy over n items is 100·k/n for an integer k, printed at the paper's
precision (`lexsem.stats.attainable`). Each cell's n comes from the public data of its column,
as the benchmark declares it (`SubsetSpec.expected_items`, the rows of the public file or
Hugging Face split; for a benchmark that drops incomplete rows, `paper_items`, the rows that
remain):

- a subset: that subset's items;
- `_micro`, or a `micro` aggregate (BiVLC's `_replace`, ...): the items pooled, n = the sum;
- `_macro`, or a `macro` aggregate (SugarCrepe's `_replace`, ...): the mean of the subsets'
  accuracies, checked as a mean of fractions k_i/n_i (`attainable_mean`);
- any other aggregate (ARO's `_vg_relation_macro`: a mean over the data's relation labels,
  whose counts only the data gives) is not checked, and says why.

A table prints its numbers with the same places, stored without trailing zeros (86.80 is
86.8): its precision is the places most of its cells have (`printed_decimals`), and a cell
printed with more (BiVLC Table 4's 9.263) is read at its own. Where the paper reports a count
other than the public one (`paper_items`: SugarCrepe's swap_obj, 246 in the paper and 245 in
the public file), the cell also says whether some k over the paper's count gives it. The
n of a cell is always the public one. `check_table` gives each cell of a table with its n and
whether it is attainable; `unattainable` the cells that are not."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.selectors import parse_selector
from lexsem.errors import LexsemError
from lexsem.report.paper.facts import Cell, Column, PaperTable
from lexsem.stats.attainable import attainable, attainable_mean

__all__ = [
    "MARK",
    "PublishedCell",
    "check_cell",
    "check_table",
    "check_tables",
    "column_counts",
    "printed_decimals",
    "scored_items",
    "unattainable",
]

MARK = "†"  # on a published number that no k/n over the public items gives

Mean = Literal["items", "macro"]


@dataclass(frozen=True)
class PublishedCell:
    """One published number with the items it is over and whether some k/n gives it.

    `mean`: `items` (an accuracy over `n` items, pooled ones included) or `macro` (the mean of
    the accuracies of subsets of `ns` items; `n` is None); `attainable`: None when not checked
    (`why` says why)."""

    table: str  # PaperTable.name
    paper: str  # the paper's title
    table_label: str  # the paper's name for the table ("Table 2")
    model: str
    column: Column
    published: float
    decimals: int  # the places the paper prints
    mean: Mean | None
    ns: tuple[int, ...]  # the item count of each subset the number is over
    attainable: bool | None
    why: str | None = None
    # over the paper's own counts, where they differ from the public ones (else None)
    paper_ns: tuple[int, ...] | None = None
    attainable_over_paper: bool | None = None

    @property
    def n(self) -> int | None:
        """The items an accuracy is over (None for a macro, or not checked)."""
        return sum(self.ns) if self.mean == "items" else None

    @property
    def subsets(self) -> str:
        """`swap_obj 245`, `_micro 7511`, `_macro of 245, 666, ...`: n as a reader checks it."""
        if self.mean == "items":
            return f"{self.column.subset} {self.n}"
        if self.mean == "macro":
            return f"{self.column.subset} of {', '.join(map(str, self.ns))}"
        return self.column.subset


def printed_decimals(table: PaperTable) -> int:
    """The places `table` prints: those most of its published numbers have (the more places
    on a tie); 0 for a table without cells."""
    counts = Counter(_decimals(c.published) for c in table.cells)
    return max(counts, key=lambda places: (counts[places], places), default=0)


def _decimals(value: float) -> int:
    exponent = Decimal(repr(float(value))).as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def scored_items(bench: Benchmark, sub: SubsetSpec) -> int:
    """The items of `sub` a run scores: the public rows (`expected_items`), less the
    incomplete rows dropped where `bench` drops them (then `paper_items`, the rows that
    remain: VISLA spatial's 652 rows less 12 with an empty negative)."""
    if bench.drop_incomplete and sub.paper_items is not None:
        return sub.paper_items
    return sub.expected_items


def column_counts(column: Column, *, paper: bool = False) -> tuple[Mean, tuple[int, ...]] | str:
    """(`items` or `macro`, the item count of each subset) of a column's number, or why its
    n is not known without the data (one line); `paper`: the counts the paper reports where
    the benchmark records them (`paper_items`), else the public ones."""
    try:
        bench, subsets = parse_selector(column.benchmark)
    except LexsemError as exc:
        return f"benchmark {column.benchmark!r} is not known ({exc})"

    def count(sub: SubsetSpec) -> int:
        if paper and sub.paper_items is not None:
            return sub.paper_items
        return scored_items(bench, sub)

    by_name = {s.name: s for s in subsets}
    name = column.subset
    if name in by_name:
        return "items", (count(by_name[name]),)
    counts = tuple(count(s) for s in subsets)
    if name == "_micro":
        return "items", counts
    if name == "_macro":
        return "macro", counts
    for agg in bench.aggregates:
        if name == f"_{agg.name}":
            ns = tuple(count(bench.subset(m)) for m in agg.members)
            return ("items" if agg.mean == "micro" else "macro"), ns
    return (
        f"{name} of {bench.name} is computed from the data's labels: its item counts are "
        "not declared by the benchmark"
    )


def check_cell(table: PaperTable, cell: Cell, decimals: int | None = None) -> PublishedCell:
    """`cell` of `table` with its n and whether some k/n gives it at `decimals` places
    (default: the table's, `printed_decimals`, or the cell's own where it prints more)."""
    table_places = printed_decimals(table) if decimals is None else decimals
    places = max(table_places, _decimals(cell.published))
    base = {
        "table": table.name,
        "paper": table.paper,
        "table_label": table.table,
        "model": cell.model,
        "column": cell.column,
        "published": cell.published,
        "decimals": places,
    }
    counts = column_counts(cell.column)
    if isinstance(counts, str):
        return PublishedCell(**base, mean=None, ns=(), attainable=None, why=counts)
    mean, ns = counts
    found = _check(cell.published, mean, ns, places)
    why = None if found is not None else "the search for subset accuracies ran out of budget"
    paper = column_counts(cell.column, paper=True)
    extra = {}
    if not isinstance(paper, str) and paper[1] != ns:
        extra = {
            "paper_ns": paper[1],
            "attainable_over_paper": _check(cell.published, *paper, places),
        }
    return PublishedCell(**base, mean=mean, ns=ns, attainable=found, why=why, **extra)


def _check(value: float, mean: Mean, ns: tuple[int, ...], places: int) -> bool | None:
    if mean == "items":
        return attainable(value, sum(ns), places)
    return attainable_mean(value, ns, places)


def check_table(table: PaperTable) -> list[PublishedCell]:
    """Every published number of `table`, in table order, with its n and attainability."""
    places = printed_decimals(table)
    return [check_cell(table, c, places) for c in table.cells]


def check_tables(tables: Iterable[PaperTable]) -> list[PublishedCell]:
    return [cell for table in tables for cell in check_table(table)]


def unattainable(table: PaperTable) -> dict[tuple[str, Column], PublishedCell]:
    """(model, column) -> the cell, for each published number of `table` that no k/n gives."""
    return {(c.model, c.column): c for c in check_table(table) if c.attainable is False}

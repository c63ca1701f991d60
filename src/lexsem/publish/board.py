"""The leaderboard's tables: one per benchmark, task, metric and subset (an aggregate, `_micro`,
`_macro` or a labelled one, included), its models sorted by accuracy with a 95% interval and
their rank group (`lexsem.stats.rank_groups`: exact McNemar on the items every model of the
table scored, Holm-corrected over the table's pairs).

Intervals: for a subset and `_micro` the Wilson score interval of the recorded hits of n
(`lexsem.stats.wilson`), the same method at the same level for every run, whatever bootstrap
each run made; for another aggregate (a macro mean is no proportion of items) the run's own
bootstrap interval when it has one. Rank groups are computed for a subset and `_micro` (the
items are paired by subset and item id); a macro aggregate gets none (its items do not weigh
alike). A model without per-item hits for the table has no rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lexsem.publish.facts import FAMILIES, benchmark_family
from lexsem.publish.merge import Entry
from lexsem.report.tables import label, subset_order, table_title
from lexsem.results.same_data import data_files
from lexsem.results.schema import MetricResult
from lexsem.stats.bootstrap import MICRO
from lexsem.stats.rank_groups import RankGroups, rank_groups
from lexsem.stats.wilson import wilson_interval

__all__ = ["CONFIDENCE", "BoardRow", "BoardTable", "board_tables", "family_order"]

CONFIDENCE = 0.95


@dataclass
class BoardRow:
    entry: Entry
    result: MetricResult
    ci: tuple[float, float] | None
    ci_method: str  # "wilson", "bootstrap" or "" (none)
    rank: int | None = None
    group: str = ""

    @property
    def model(self) -> str:
        return self.entry.run.name


@dataclass
class BoardTable:
    benchmark: str
    task: str
    metric: str
    subset: str
    family: str
    title: str
    subset_label: str
    rows: list[BoardRow] = field(default_factory=list)
    groups: RankGroups | None = None
    sha256: dict[str, str] = field(default_factory=dict)  # subset -> sha256 of its file

    @property
    def key(self) -> str:
        return f"{self.benchmark}|{self.task}|{self.metric}|{self.subset}"


def _ci(r: MetricResult) -> tuple[tuple[float, float] | None, str]:
    if not r.subset.startswith("_") or r.subset == MICRO:
        ci = wilson_interval(r.hits, r.n, CONFIDENCE) if 0 <= r.hits <= r.n else None
        return ci, "wilson" if ci else ""
    if r.ci_low is not None and r.ci_high is not None:
        return (r.ci_low, r.ci_high), "bootstrap"
    return None, ""


def _paired(table: BoardTable) -> dict[str, np.ndarray]:
    """model -> its hits on the items every model of `table` with per-item hits scored, in
    one order (the items are keyed by subset and item id, the keys numbered once for all)."""
    models, keys, values = [], [], []
    for row in table.rows:
        hits = row.entry.run.hits
        mask = pc.and_(
            pc.and_(pc.equal(hits["benchmark"], table.benchmark),
                    pc.equal(hits["task"], table.task)),
            pc.equal(hits["metric"], table.metric),
        )  # fmt: skip
        if table.subset != MICRO:
            mask = pc.and_(mask, pc.equal(hits["subset"], table.subset))
        mine = hits.filter(mask)
        if mine.num_rows == 0:
            continue
        models.append(row.model)
        keys.append(pc.binary_join_element_wise(mine["subset"], mine["item_id"], "\x1f"))
        values.append(mine["hit"].fill_null(False).to_numpy(zero_copy_only=False).astype(bool))
    if not models:
        return {}
    codes = pa.chunked_array([c for k in keys for c in pa.chunked_array(k).chunks])
    encoded = codes.combine_chunks().dictionary_encode()
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    n_keys = len(encoded.dictionary)
    dense, start = [], 0
    for v in values:
        row = np.full(n_keys, -1, dtype=np.int8)
        row[indices[start : start + len(v)]] = v
        start += len(v)
        dense.append(row)
    common = np.logical_and.reduce([d >= 0 for d in dense])
    return {m: d[common].astype(bool) for m, d in zip(models, dense, strict=True)}


def _rank(table: BoardTable) -> None:
    if table.subset.startswith("_") and table.subset != MICRO:
        return
    paired = _paired(table)
    if len(paired) < 1 or not len(next(iter(paired.values()))):
        return
    table.groups = rank_groups(paired)
    for row in table.rows:
        if row.model in table.groups.rank:
            row.rank = table.groups.rank[row.model]
            row.group = table.groups.letters[row.model]


def family_order(families: Sequence[str]) -> list[str]:
    """The families in `FAMILIES` order, then any other in first-seen order."""
    seen = list(dict.fromkeys(families))
    return [f for f in FAMILIES if f in seen] + [f for f in seen if f not in FAMILIES]


def board_tables(entries: Sequence[Entry]) -> list[BoardTable]:
    """Every table of the board, by family, benchmark, task, metric, then subsets in the
    benchmark's own order and the aggregates after them."""
    tables: dict[tuple[str, str, str, str], BoardTable] = {}
    for e in entries:
        files = data_files(e.run.record, e.benchmark)
        for r in e.run.record.results:
            if (r.benchmark, r.task) != (e.benchmark, e.task):
                continue
            key = (r.benchmark, r.task, r.metric, r.subset)
            table = tables.get(key)
            if table is None:
                subset_label = r.label or label(r.subset)
                table = tables[key] = BoardTable(
                    r.benchmark, r.task, r.metric, r.subset, benchmark_family(r.benchmark, r.task),
                    table_title(r.benchmark, r.task, r.metric), subset_label,
                )  # fmt: skip
            shas = {s: sha for s, (_, sha) in files.items()
                    if s == r.subset or r.subset.startswith("_")}  # fmt: skip
            table.sha256.update(shas)
            ci, method = _ci(r)
            table.rows.append(BoardRow(e, r, ci, method))
    for table in tables.values():
        table.rows.sort(key=lambda row: (-row.result.accuracy, row.model))
        _rank(table)
    families = family_order([t.family for t in tables.values()])
    order: dict[tuple[str, str, str], list[str]] = {}
    for t in tables.values():
        order.setdefault((t.benchmark, t.task, t.metric), []).append(t.subset)
    position = {
        k: {s: i for i, s in enumerate(subset_order(k[0], subs))} for k, subs in order.items()
    }
    return sorted(
        tables.values(),
        key=lambda t: (families.index(t.family), t.benchmark, t.task, t.metric,
                       position[(t.benchmark, t.task, t.metric)][t.subset]),
    )  # fmt: skip

"""Many runs' per-item tables joined into one: a row per (benchmark, subset, item, task,
metric), a column per run (hit, tie, margin; absent where the run did not score the row).

Each run's items.parquet is read with pyarrow (`lexsem.results.run_folder`), and the rows are
matched by one dictionary encoding of their joined key, so opening ten runs of 50,000 items
takes well under a second. Runs that read a benchmark from different data (`compare`'s rule,
`lexsem.results.same_data`) are kept apart: the benchmark of each group after the first is
shown as `NAME · data 2`, ... and its rows are never matched with the first group's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lexsem.errors import LexsemError
from lexsem.explore.margins import margins
from lexsem.report.labels import run_labels
from lexsem.results.run_folder import load_items, load_run
from lexsem.results.same_data import comparable_groups
from lexsem.results.schema import RunRecord

__all__ = ["KEY_COLUMNS", "ExploreRun", "RunsTable", "open_runs"]

KEY_COLUMNS = ("view", "subset", "item_id", "task", "metric")
_BASE = ("benchmark", "subset", "item_id", "task", "metric", "hit", "tie")
_SEP = "\x1f"


@dataclass(frozen=True)
class ExploreRun:
    """One run as the page shows it: its label, folder, record and per-item table. `name` is
    its label in a report (`lexsem.report.labels`), which runs of one model on different
    benchmarks share; `label` tells them apart by their benchmarks (`minilm · synthetic`), as
    the page lists every run together."""

    label: str
    folder: Path
    record: RunRecord
    items: pa.Table
    name: str = ""

    @property
    def human(self) -> bool:
        """A run of people's answers (`lexsem annotate human-run`)."""
        return self.record.model.spec.startswith("human:")

    def score_columns(self) -> list[str]:
        return [c for c in self.items.column_names if c not in _BASE]


@dataclass(frozen=True)
class RunsTable:
    """The joined table: `keys` (KEY_COLUMNS plus `benchmark`, one row per key), and per run
    (a column of each matrix) `hit` (1 hit, 0 miss, -1 not scored), `tie`, `margin` (NaN where
    none) and `row` (the row in the run's own items table, -1 where none)."""

    runs: tuple[ExploreRun, ...]
    keys: pa.Table
    hit: np.ndarray
    tie: np.ndarray
    margin: np.ndarray
    row: np.ndarray
    notes: tuple[str, ...]  # why runs are shown apart
    columns: dict[str, np.ndarray]  # the key columns as numpy arrays of strings

    def __len__(self) -> int:
        return self.keys.num_rows

    def column(self, name: str) -> np.ndarray:
        """A key column as a numpy array of strings (objects)."""
        return self.columns[name]


def _page_labels(records: Sequence[RunRecord], names: dict[str, str]) -> dict[str, str]:
    """run id -> its label on the page: its report label, with its benchmarks where runs of
    one model on different benchmarks (a sweep's jobs) share that label."""
    shared = Counter(names[r.run_id] for r in records)
    return {
        r.run_id: names[r.run_id] if shared[names[r.run_id]] == 1
        else f"{names[r.run_id]} · {', '.join(b.name for b in r.benchmarks)}"
        for r in records
    }  # fmt: skip


def _views(records: Sequence[RunRecord]) -> tuple[list[dict[str, str]], list[str]]:
    """Per run, benchmark -> the name it is shown under (apart when on other data), and why."""
    views: list[dict[str, str]] = [{} for _ in records]
    notes: list[str] = []
    names = dict.fromkeys(b.name for r in records for b in r.benchmarks)
    for bench in names:
        having = [k for k, r in enumerate(records) if any(b.name == bench for b in r.benchmarks)]
        groups, why = comparable_groups([records[k] for k in having], bench)
        for g, group in enumerate(groups):
            for rec in group:
                k = next(k for k in having if records[k] is rec)
                views[k][bench] = bench if g == 0 else f"{bench} · data {g + 1}"
        notes += [f"{bench} · data {g + 2}: shown apart, {w}" for g, w in enumerate(why)]
    return views, notes


def _score_arrays(items: pa.Table) -> dict[str, np.ndarray]:
    out = {}
    for name in items.column_names:
        if name in _BASE:
            continue
        col = items.column(name)
        if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
            out[name] = col.to_numpy(zero_copy_only=False).astype(np.float64)
    return out


def _keys(items: pa.Table, views: dict[str, str]) -> pa.Table:
    """A run's key columns (`benchmark` and KEY_COLUMNS), each benchmark under its view."""
    bench = items.column("benchmark")
    view = bench
    for name, shown in views.items():
        if shown != name:
            view = pc.if_else(pc.equal(bench, name), pa.scalar(shown), view)
    cols = {"benchmark": bench, "view": view} | {c: items.column(c) for c in KEY_COLUMNS[1:]}
    return pa.table(cols)


def _join(tables: list[pa.Table]) -> tuple[list[np.ndarray], pa.Table]:
    """Per table, each row's key number; and the keys (first-seen order). Tables with the same
    keys in the same order (runs of one benchmark and tasks) are encoded once."""
    distinct: list[int] = []
    same_as: list[int] = []
    for k, t in enumerate(tables):
        match = next((d for d in distinct if tables[d].equals(t)), None)
        if match is None:
            distinct.append(k)
        same_as.append(k if match is None else match)
    every = pa.concat_tables([tables[d] for d in distinct]).combine_chunks()
    joined = pc.binary_join_element_wise(
        *(every.column(c).combine_chunks() for c in KEY_COLUMNS), _SEP
    )
    codes = joined.dictionary_encode().indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    part: dict[int, np.ndarray] = {}
    start = 0
    for d in distinct:
        part[d] = codes[start : start + tables[d].num_rows]
        start += tables[d].num_rows
    return [part[same_as[k]] for k in range(len(tables))], every.take(pa.array(first))


def open_runs(folders: Sequence[Path]) -> RunsTable:
    """Read the run folders and join their items; a folder that is no run, or whose files are
    damaged, is an error naming it."""
    if not folders:
        raise LexsemError("no run folders given")
    with ThreadPoolExecutor(max_workers=min(8, len(folders))) as pool:  # pyarrow reads in C
        read = list(pool.map(lambda f: (load_run(f), load_items(f)), folders))
    records = [r for r, _ in read]
    seen: dict[str, Path] = {}
    for f, r in zip(folders, records, strict=True):
        if r.run_id in seen:
            raise LexsemError(f"{f} and {seen[r.run_id]} hold the same run ({r.run_id})")
        seen[r.run_id] = f
    names = run_labels(records)
    labels = _page_labels(records, names)
    runs = tuple(
        ExploreRun(labels[r.run_id], Path(f), r, items, names[r.run_id])
        for f, (r, items) in zip(folders, read, strict=True)
    )
    views, notes = _views(records)
    codes, keys = _join([_keys(run.items, views[k]) for k, run in enumerate(runs)])
    n_keys, n_runs = keys.num_rows, len(runs)
    hit = np.full((n_keys, n_runs), -1, np.int8)
    tie = np.zeros((n_keys, n_runs), bool)
    margin = np.full((n_keys, n_runs), np.nan)
    row = np.full((n_keys, n_runs), -1, np.int64)
    for k, r in enumerate(runs):
        at = codes[k]
        hit[at, k] = r.items.column("hit").to_numpy(zero_copy_only=False).astype(np.int8)
        tie[at, k] = r.items.column("tie").to_numpy(zero_copy_only=False).astype(bool)
        row[at, k] = np.arange(len(at))
        margin[at, k] = margins(r.items.column("metric"), _score_arrays(r.items))
    cols = {c: keys.column(c).to_numpy(zero_copy_only=False) for c in keys.column_names}
    return RunsTable(runs, keys, hit, tie, margin, row, tuple(notes), cols)

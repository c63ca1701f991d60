"""A run in memory: the record (run.json) and the per-item table (items.parquet)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from lexsem.results.run_folder import load_items, load_run, save_run
from lexsem.results.schema import RunRecord
from lexsem.stats.bootstrap import MICRO


@dataclass
class Run:
    record: RunRecord
    items: pa.Table

    def save(self, folder: str | Path, *, force: bool = False) -> Path:
        """Write the run folder as a unit; one that holds a run is replaced only with `force`."""
        return save_run(folder, self.record, self.items, force=force)

    @classmethod
    def load(cls, folder: str | Path) -> Run:
        return cls(load_run(folder), load_items(folder))

    def accuracy(self, benchmark: str, metric: str, subset: str = MICRO) -> float:
        """Accuracy in percent of one metric on one subset (or `_micro` / `_macro`)."""
        return self.record.result(benchmark, metric, subset).accuracy

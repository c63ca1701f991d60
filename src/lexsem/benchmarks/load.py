"""Load a benchmark selection: each subset through its benchmark's loader, with what was read
(file and sha256) recorded for the run, checked (`checks.py`): ids, empty subsets, row counts
against the published data, rows left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lexsem.benchmarks import checks
from lexsem.benchmarks.base import Benchmark, LoadContext, LoadedSubset
from lexsem.benchmarks.checks import Notice
from lexsem.benchmarks.items import Item
from lexsem.benchmarks.selectors import names_subsets, parse_selector


@dataclass
class LoadedBenchmark:
    spec: Benchmark
    subsets: list[LoadedSubset]
    # what the run must say about the data (warned when loaded, recorded in run.json)
    notices: list[Notice] = field(default_factory=list)
    # ids of rows of no subset (unknown type) when the whole benchmark was selected: they count
    # against the coverage of the benchmark-wide results
    unassigned: list[str] = field(default_factory=list)

    @property
    def items(self) -> list[Item]:
        return [it for s in self.subsets for it in s.items]

    def files(self) -> list[dict[str, str | None]]:
        return [{"subset": s.spec.name, "file": s.file, "sha256": s.sha256} for s in self.subsets]

    def dropped(self) -> dict[str, list[str]]:
        """Ids of incomplete items left out, per subset (only for `drop_incomplete` specs)."""
        return {s.spec.name: s.dropped for s in self.subsets if s.dropped}

    def items_by_subset(self) -> dict[str, list[Item]]:
        return {s.spec.name: s.items for s in self.subsets}

    def totals(self) -> dict[str, int]:
        """Items each subset stands for: those loaded, plus the incomplete ones left out of a
        source that is not a pinned public file (whose left-out rows are the documented ones)."""
        counted = self.spec.origin != "files"
        return {
            s.spec.name: len(s.items) + (len(s.dropped) if counted else 0) for s in self.subsets
        }


def load_benchmark(
    selector: str,
    *,
    data_dir: str | Path | None = None,
    cache_root: str | Path | None = None,
    offline: bool | None = None,
    strict: bool = True,
) -> LoadedBenchmark:
    bench, subsets = parse_selector(selector)
    ctx = LoadContext(
        data_dir=Path(data_dir) if data_dir is not None else None,
        cache_root=Path(cache_root) if cache_root is not None else None,
        offline=offline,
        strict=strict,
    )
    loaded = [bench.loader(bench, sub, ctx) for sub in subsets]
    if not strict:  # `lexsem validate`: everything as read, it reports what it finds
        return LoadedBenchmark(bench, loaded)
    return _checked(bench, loaded, named=names_subsets(selector))


def _checked(bench: Benchmark, loaded: list[LoadedSubset], *, named: bool) -> LoadedBenchmark:
    for sub in loaded:
        checks.check_ids(bench, sub)
    unknown = checks.unknown_rows(loaded)
    notices = [
        *checks.row_count_notices(bench, loaded),
        *checks.dropped_notices(bench, loaded),
        *checks.unknown_rows_notices(bench, unknown),
    ]
    kept, empty = checks.keep_nonempty(bench, loaded, named=named)
    notices += empty
    checks.warn(notices)
    return LoadedBenchmark(bench, kept, notices, [] if named else list(unknown))

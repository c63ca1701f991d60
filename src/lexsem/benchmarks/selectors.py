"""Selectors: `NAME` (all subsets), `NAME/SUBSET[,SUBSET...]` (those subsets of a registered
benchmark, `lexsem.benchmarks.catalog`), or a user's own file in a supported format,
`FORMAT:PATH` (`lexsem.benchmarks.user`)."""

from __future__ import annotations

from lexsem.benchmarks import user
from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.catalog import get

__all__ = ["parse_selector"]


def parse_selector(selector: str) -> tuple[Benchmark, tuple[SubsetSpec, ...]]:
    """`sugarcrepe_pp` -> all subsets; `sugarcrepe_pp/swap_obj` -> that subset;
    `scpp:path/to/file.json` -> a user's file read as SugarCrepe++."""
    if user.is_user_selector(selector):
        bench = user.user_benchmark(selector)
        return bench, bench.subsets
    name, _, sub = selector.strip().partition("/")
    bench = get(name)
    if not sub:
        return bench, bench.subsets
    return bench, tuple(bench.subset(s) for s in sub.split(","))

"""Selectors: `NAME` (all subsets), `NAME/SUBSET[,SUBSET...]` (those subsets of a registered
benchmark, `lexsem.benchmarks.catalog`), or a user's own file in a supported format,
`FORMAT:PATH` (`lexsem.benchmarks.user`), or a benchmark frozen by `lexsem build`, `build:DIR`
(`lexsem.benchmarks.frozen`)."""

from __future__ import annotations

import dataclasses

from lexsem.benchmarks import frozen, user
from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.catalog import get
from lexsem.errors import DataError

__all__ = ["names_subsets", "parse_selector"]


def parse_selector(selector: str) -> tuple[Benchmark, tuple[SubsetSpec, ...]]:
    """`sugarcrepe_pp` -> all subsets; `sugarcrepe_pp/swap_obj` -> that subset;
    `scpp:path/to/file.json` -> a user's file read as SugarCrepe++; `build:DIR` -> the
    benchmark frozen in the build folder DIR."""
    if frozen.is_build_selector(selector):
        bench = _frozen_benchmark(selector)
        return bench, bench.subsets
    if user.is_user_selector(selector):
        bench = user.user_benchmark(selector)
        return bench, bench.subsets
    name, _, sub = selector.strip().partition("/")
    bench = get(name)
    if not sub:
        return bench, bench.subsets
    return bench, tuple(bench.subset(s) for s in sub.split(","))


def names_subsets(selector: str) -> bool:
    """True for `NAME/SUBSET[,...]` (the user chose those subsets), False for a whole benchmark,
    a user's file or folder, or a frozen build."""
    if frozen.is_build_selector(selector) or user.is_user_selector(selector):
        return False
    return "/" in selector.strip()


def _frozen_benchmark(selector: str) -> Benchmark:
    """`build:DIR`: the frozen folder read in the format its data card names, its files
    checked against the card's sha256s; a subset file the card does not list is an error."""
    inner, folder = frozen.resolve(selector)
    bench = user.user_benchmark(inner)
    files = {f["file"] for f in frozen.read_card(folder)["files"]}
    if (
        user.FORMATS.get(inner.partition(":")[0]).parser is None
    ):  # parquet: subsets named by the data
        found = (p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet"))
        extra = sorted(name for name in found if name not in files)
    else:
        listed = {name.rpartition(".")[0] for name in files}
        extra = sorted(s.name for s in bench.subsets if s.name not in listed)
    if extra:
        raise DataError(
            f"{selector}: {folder} holds subset file(s) {', '.join(extra)} that its "
            f"{frozen.CARD_JSON} does not list"
        )
    build = folder.parent if folder.name == frozen.BENCHMARK_DIR else folder
    fmt = inner.partition(":")[0]
    return dataclasses.replace(
        bench,
        name=f"{frozen.PREFIX}:{build.name}",
        description=f"benchmark frozen by lexsem build in {folder}, read as {fmt}",
    )

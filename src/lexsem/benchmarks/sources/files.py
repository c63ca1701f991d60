"""Items from pinned public files: resolve (offline folder, cache or download), verify the
sha256, parse, and drop the known-incomplete rows where the benchmark says so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lexsem.benchmarks.base import Benchmark, LoadContext, LoadedSubset, Loader, SubsetSpec
from lexsem.benchmarks.items import Item
from lexsem.digests import sha256_file
from lexsem.download import SourceFile, resolve_source

# parse(path, subset name, *, strict) -> items
Parser = Callable[..., list[Item]]


def file_subset(
    name: str, folder: str, url: str, file: str, sha256: str, items: int, paper_items: int | None
) -> SubsetSpec:
    """The subset `name` read from one pinned public file: `file` under `url`, kept as
    ``<folder>/<file>`` (offline folder, cache), with `items` rows (`paper_items` in the
    paper)."""
    return SubsetSpec(
        name,
        SourceFile(f"{folder}/{file}", f"{url}/{file}", sha256),
        expected_items=items,
        paper_items=paper_items,
    )


def parse_keeping_complete(
    parse: Parser, path: Path, subset: str, drop_incomplete: bool, strict: bool
) -> tuple[list[Item], list[str]]:
    """Parse `path`; with `drop_incomplete`, leave out (and return the ids of) items with an
    empty text instead of failing on them."""
    if not (drop_incomplete and strict):
        return parse(path, subset, strict=strict), []
    items: list[Item] = []
    dropped: list[str] = []
    for it in parse(path, subset, strict=False):
        if all(t.strip() for t in it.texts()):
            items.append(it)
        else:
            dropped.append(it.id)
    return items, dropped


def file_loader(parse: Parser) -> Loader:
    """A loader for pinned public files in the format `parse` reads."""

    def load(bench: Benchmark, sub: SubsetSpec, ctx: LoadContext) -> LoadedSubset:
        assert sub.source is not None, f"{bench.name}/{sub.name} has no source file"
        path = resolve_source(
            sub.source, data_dir=ctx.data_dir, cache_root=ctx.cache_root, offline=ctx.offline
        )
        items, dropped = parse_keeping_complete(
            parse, path, sub.name, bench.drop_incomplete, ctx.strict
        )
        return LoadedSubset(sub, items, sub.source.name, sha256_file(path), dropped)

    return load

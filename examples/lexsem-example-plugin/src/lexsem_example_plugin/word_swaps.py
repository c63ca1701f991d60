"""`word_swaps`: text triplets (P1, P2, N) in a format of its own, one triplet a line as
`P1 | P2 | N`, `[subset]` lines starting each subset; the file ships inside this package.
`parse_swaps_file` reads a user's file of that format (`-b swaps:FILE.txt`), one subset."""

from __future__ import annotations

import hashlib
from importlib.resources import files
from pathlib import Path

from lexsem.benchmarks.base import Benchmark, LoadContext, LoadedSubset, SubsetSpec
from lexsem.benchmarks.items import TripletItem
from lexsem.errors import DataError

DATA = Path(str(files(__package__) / "data" / "word_swaps.txt"))


def parse_word_swaps(
    path: Path, subset: str, *, strict: bool = True, every: bool = False
) -> list[TripletItem]:
    """The triplets of `subset` (`every`: all of the file's, as `subset`'s); a line that is
    not three `|`-separated texts names its line."""
    items, current = [], None
    for line_no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or not all(parts):
            if strict:
                raise DataError("not 'P1 | P2 | N'", file=path, line=line_no)
            continue
        if every or current == subset:
            items.append(TripletItem(f"{subset}-{len(items)}", subset, None, *parts))
    return items


def parse_swaps_file(path: Path, subset: str, *, strict: bool = True) -> list[TripletItem]:
    """A user's file in this format (`-b swaps:FILE.txt`): every triplet, `[subset]` lines
    ignored, as the subset named after the file."""
    return parse_word_swaps(path, subset, strict=strict, every=True)


def load(bench: Benchmark, sub: SubsetSpec, ctx: LoadContext) -> LoadedSubset:
    sha256 = hashlib.sha256(DATA.read_bytes()).hexdigest()
    return LoadedSubset(sub, parse_word_swaps(DATA, sub.name, strict=ctx.strict), str(DATA), sha256)


BENCHMARK = Benchmark(
    name="word_swaps",
    description="text triplets whose negative swaps or replaces a word (an example plugin's)",
    item_kind="triplet",
    subsets=(
        SubsetSpec("swap", None, expected_items=3),
        SubsetSpec("replace", None, expected_items=2),
    ),
    loader=load,
    text_tasks=("tot", "anchor_p2"),
    image_tasks=(),
    paper="(an example)",
    images="none",
)

"""What a benchmark is, in one object: its subsets and where their items come from, how to load
them, which tasks it supports, which extra aggregates it reports (and how they are labelled),
and how its images are decoded.

A benchmark of an existing item kind is one `Benchmark(...)` in one file (see
docs/extending.md); everything else (planning, scoring, statistics, tables) reads it from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lexsem.benchmarks.items import Item
from lexsem.download import SourceFile
from lexsem.errors import LexsemError
from lexsem.stats.bootstrap import MACRO, MICRO, Accuracy, summarize
from lexsem.stats.ties import Hits

ItemKind = Literal["triplet", "pair", "quad", "multi"]
Origin = Literal["files", "generated", "hf", "user"]


@dataclass(frozen=True)
class SubsetSpec:
    name: str
    source: SourceFile | None  # None for generated / Hugging Face benchmarks
    expected_items: int  # rows in the public file (what the loader must return)
    paper_items: int | None = None  # what the paper reports, when it differs or is known


@dataclass(frozen=True)
class LoadContext:
    """Where a loader may read from: the offline data folder, the download cache, the network."""

    data_dir: Path | None = None
    cache_root: Path | None = None
    offline: bool | None = None
    strict: bool = True


@dataclass
class LoadedSubset:
    spec: SubsetSpec
    items: list[Item]
    file: str | None  # the file read (SourceFile name, user path, HF source), None if generated
    sha256: str
    dropped: list[str] = field(default_factory=list)  # ids of incomplete items left out
    # id -> type of the source's rows that belong to no subset of the benchmark (left out)
    unassigned: dict[str, str] = field(default_factory=dict)


# loader(benchmark, subset, context) -> the subset's items and provenance
Loader = Callable[["Benchmark", SubsetSpec, LoadContext], LoadedSubset]
# extra(task name, metric, hits per subset, items per subset, bootstrap kwargs)
#   -> [(accuracy row named "_<something>", label)]
ExtraAggregates = Callable[
    [str, str, Mapping[str, Hits], Mapping[str, list[Item]], dict[str, Any]],
    list[tuple[Accuracy, str]],
]


@dataclass(frozen=True)
class Aggregate:
    """A named group of subsets reported as an extra row `_<name>`: `macro` (mean of the
    subsets' accuracies, SugarCrepe's REPLACE/SWAP/ADD) or `micro` (pooled items, BiVLC types)."""

    name: str
    members: tuple[str, ...]
    mean: Literal["macro", "micro"] = "macro"
    label: str | None = None


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    item_kind: ItemKind
    subsets: tuple[SubsetSpec, ...]
    loader: Loader = field(repr=False)
    text_tasks: tuple[str, ...]  # tasks a text encoder alone can run
    image_tasks: tuple[str, ...] = ()  # tasks that need images
    paper: str = ""
    images: str = ""
    origin: Origin = "files"
    # Items with an empty text are dropped (and recorded) instead of being an error: only for
    # pinned public files with known incomplete rows (see docs/fidelity.md).
    drop_incomplete: bool = False
    aggregates: tuple[Aggregate, ...] = ()
    extra_aggregates: ExtraAggregates | None = field(default=None, repr=False)
    # how its images are decoded (a preset name of `lexsem.images.decode`), as its reference does
    decode: str = "default"
    # tasks run only when named (`--task`), never by default, so that default runs do not change
    # (SugarCrepe++'s per-caption yes/no task, `lexsem.tasks.yesno`)
    opt_in_tasks: tuple[str, ...] = ()

    def subset(self, name: str) -> SubsetSpec:
        for s in self.subsets:
            if s.name == name:
                return s
        from lexsem.registry import did_you_mean

        known = [s.name for s in self.subsets]
        raise LexsemError(
            f"benchmark {self.name!r} has no subset {name!r}{did_you_mean(name, known)} "
            f"(subsets: {', '.join(known)})"
        )

    @property
    def tasks(self) -> tuple[str, ...]:
        """Every task it supports, the opt-in ones included."""
        return self.text_tasks + self.image_tasks + self.opt_in_tasks

    @property
    def sources(self) -> tuple[SourceFile, ...]:
        seen: dict[str, SourceFile] = {}
        for s in self.subsets:
            if s.source is not None:
                seen.setdefault(s.source.name, s.source)
        return tuple(seen.values())

    def summarize(
        self,
        task: str,
        metric: str,
        by_subset: Mapping[str, Hits],
        items: Mapping[str, list[Item]],
        **boot: Any,
    ) -> list[tuple[Accuracy, str | None]]:
        """Accuracy per subset, micro and macro averages, the group aggregates, and the
        benchmark's own extra aggregates, each with its label (None: a plain row)."""
        rows: list[tuple[Accuracy, str | None]] = [(a, None) for a in summarize(by_subset, **boot)]
        rows += [(self._group(g, by_subset, boot), g.label) for g in self._present(by_subset)]
        if self.extra_aggregates is not None:
            rows += list(self.extra_aggregates(task, metric, by_subset, items, boot))
        return rows

    def _present(self, by_subset: Mapping[str, Hits]) -> list[Aggregate]:
        return [g for g in self.aggregates if all(m in by_subset for m in g.members)]

    @staticmethod
    def _group(g: Aggregate, by_subset: Mapping[str, Hits], boot: dict[str, Any]) -> Accuracy:
        sub = {m: by_subset[m] for m in g.members}
        if len(sub) == 1:
            (acc,) = summarize(sub, **boot)
        else:
            which = MICRO if g.mean == "micro" else MACRO
            acc = next(a for a in summarize(sub, **boot) if a.subset == which)
        return Accuracy(**{**acc.to_dict(), "subset": f"_{g.name}"})

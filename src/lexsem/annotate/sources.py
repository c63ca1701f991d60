"""What a study asks about: a benchmark selection (`-b scpp/replace_att`, `-b bivlc`,
`-b build:DIR`), sampled per subset (SugarCrepe++'s human evaluation: 30 items of each subset,
§3), or a build stage's Parquet output (its image paths relative to the build folder,
`build_folder`). Practice and gold items are drawn, seeded, from the
items the sample left out, so no annotator meets a main item in practice."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow.parquet as pq

from lexsem.annotate.build_rows import build_queries, row_subset
from lexsem.annotate.kinds import KINDS, Query
from lexsem.annotate.queries import DEFAULT_KINDS, item_queries
from lexsem.annotate.study import StudyUnits
from lexsem.benchmarks.items import Item, TripletItem
from lexsem.benchmarks.load import load_benchmark
from lexsem.errors import DataError, LexsemError
from lexsem.registry import did_you_mean

__all__ = ["benchmark_units", "build_folder", "build_units", "check_kinds", "image_reader"]

ImageFn = Callable[[str], str]


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    for k in kinds:
        if k not in KINDS:
            raise LexsemError(
                f"--kind {k!r}{did_you_mean(k, KINDS.names())}: the task kinds are "
                f"{', '.join(KINDS)}"
            )
    return tuple(dict.fromkeys(kinds))


def image_reader(
    folder: Path | None = None, *, coco_val2017: Path | None = None, image_root: Path | None = None
) -> Callable[[str], bytes]:
    """Read an image reference the way an evaluation does (COCO folders, generated roots,
    images embedded in Hugging Face datasets), or as a file beside a build table."""
    from lexsem.annotate.images import file_or_store_reader
    from lexsem.evaluator import attach_embedded_images
    from lexsem.images.image_store import ImageStore

    store: ImageStore | None = None

    def read(ref: str) -> bytes:
        nonlocal store
        if store is None:
            store = ImageStore(coco_val2017=coco_val2017, image_root=image_root)
            attach_embedded_images(store)
        return store.read(ref)

    return file_or_store_reader(folder, read)


def build_folder(table: Path) -> Path:
    """The folder a build table's relative image paths are read from: the build folder for a
    stage output (``DIR/stages/NN-name.parquet`` beside ``DIR/build.json``, `lexsem build`),
    else the table's own folder."""
    from lexsem.construct.runner import BUILD_FILE

    parent = table.resolve().parent
    if parent.name == "stages" and (parent.parent / BUILD_FILE).is_file():
        return parent.parent
    return parent


T = TypeVar("T")


def _sample(items: list[T], n: int | None, seed: int, name: str) -> list[T]:
    if n is None or n >= len(items):
        chosen = list(items)
    else:
        chosen = random.Random(f"{seed}:{name}").sample(items, n)
    return chosen


def _draw(
    groups: Sequence[tuple[str, list[T]]],
    key: Callable[[T], str],
    *,
    sample: int | None,
    total: int | None,
    seed: int,
) -> tuple[list[T], list[T]]:
    """(drawn, left out) of `groups` (subsets, by name): `sample` of each group, seeded by its
    name, then `total` of what that drew; `key` tells a group's entries apart."""
    main: list[T] = []
    rest: list[T] = []
    for name, entries in groups:
        chosen = _sample(entries, sample, seed, name)
        ids = {key(e) for e in chosen}
        main += chosen
        rest += [e for e in entries if key(e) not in ids]
    if total is not None and total < len(main):  # N entries of the whole selection
        keep = set(random.Random(f"{seed}:total").sample(range(len(main)), total))
        rest += [p for i, p in enumerate(main) if i not in keep]
        main = [p for i, p in enumerate(main) if i in keep]
    return main, rest


def benchmark_units(
    selectors: Sequence[str],
    kinds: Sequence[str],
    *,
    sample: int | None,
    seed: int,
    practice: int,
    gold: int,
    total: int | None = None,
    data_dir: Path | None = None,
) -> tuple[tuple[str, ...], Callable[[ImageFn], StudyUnits]]:
    """The study's kinds and the maker of its units (called with the study's image sink):
    `sample` items per subset, then `total` items of what that leaves (BiVLC's human baseline:
    500 instances of the whole benchmark, §4)."""
    loaded = [(sel, load_benchmark(sel, data_dir=data_dir)) for sel in selectors]
    groups = [
        (f"{sel}/{sub}", [(sel, it) for it in items])
        for sel, bench in loaded
        for sub, items in bench.items_by_subset().items()
    ]
    main, rest = _draw(groups, lambda p: p[1].id, sample=sample, total=total, seed=seed)
    if not main:
        raise LexsemError(f"{', '.join(selectors)}: no items")
    if not kinds:
        first = main[0][1]
        kinds = DEFAULT_KINDS.get(type(first), ())
        if isinstance(first, TripletItem) and not first.image:
            kinds = ("tot",)
        if not kinds:
            raise LexsemError(f"{type(first).__name__} items: name the task kind with --kind")
    if practice + gold > len(rest):
        raise LexsemError(
            f"--practice {practice} and --gold {gold} need {practice + gold} items beyond the "
            f"sample; the selection leaves {len(rest)}"
        )
    extra = random.Random(f"{seed}:practice-gold").sample(rest, practice + gold)
    kinds = tuple(kinds)

    def make(image: ImageFn) -> StudyUnits:
        def queries(pairs: list[tuple[str, Item]]) -> list[tuple[str, Query]]:
            return [
                (f"{sel}|{it.id}", q)
                for kind in kinds
                for sel, it in pairs
                for q in item_queries(it, kind, sel, image)
            ]

        gold_queries = [(k, q) for k, q in queries(extra[practice:]) if q.correct is not None]
        return StudyUnits(queries(main), queries(extra[:practice]), gold_queries)

    return kinds, make


def build_units(
    table: Path,
    kind: str,
    *,
    columns: Mapping[str, str],
    sample: int | None,
    seed: int,
    total: int | None = None,
) -> Callable[[ImageFn], StudyUnits]:
    """The maker of a study's units from a build stage's Parquet output: its accepted rows (a
    stage's rejected rows are left out), `sample` of each subset (the rows' ``subset`` column;
    one subset ``all`` without it), then `total` of what that leaves, as `benchmark_units`
    draws. No practice or gold: generated items have no right answer."""
    from lexsem.construct.stage import PROVENANCE, row_ids

    try:
        rows = pq.read_table(table).to_pylist()
    except (OSError, ValueError) as exc:
        raise DataError(f"not a readable Parquet table ({exc})", file=table) from None
    ids = (
        row_ids([r[PROVENANCE[0]] for r in rows], [r[PROVENANCE[1]] for r in rows])
        if rows and all(c in rows[0] for c in PROVENANCE)
        else [f"row:{i}" for i in range(1, len(rows) + 1)]
    )
    groups: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for r, i in zip(rows, ids, strict=True):
        if r.get("rejected") is None:
            groups.setdefault(row_subset(r), []).append((r, i))
    kept, _ = _draw([(f"{table.name}/{sub}", g) for sub, g in groups.items()],
                    lambda p: p[1], sample=sample, total=total, seed=seed)  # fmt: skip
    bench = f"parquet:{table}"

    def make(image: ImageFn) -> StudyUnits:
        qs = build_queries([r for r, _ in kept], kind, bench, image, file=table,
                           columns=columns, ids=[i for _, i in kept])  # fmt: skip
        return StudyUnits([(f"{bench}|{q.item_id}", q) for q in qs])

    return make

"""The leakage guard: does the training data contain the benchmarks a model is judged on?

`check_leakage(manifest, benchmarks, images)` compares every training example (its image, its
negative image, its caption, negatives and negative image caption) with every item of every
benchmark given (`LoadedBenchmark`s of `lexsem.benchmarks.load.load_benchmark`: images and
texts of all their subsets), three ways:

- ``image``: the same image content — the key of the evaluation cache, `image_key` of
  `lexsem.engine.keys` over the file's bytes (without a decode profile's tag, so that the
  same file matches whatever profile a benchmark decodes with);
- ``coco_id``: the same COCO image, by the id in the file name (``000000222235.jpg``,
  ``COCO_train2014_000000222235.jpg``; COCO 2014 and 2017 share ids), which finds a COCO image
  even when the benchmark's copy is not on disk or was re-encoded;
- ``caption``: the same text after normalisation (Unicode NFKC, case folded, punctuation
  removed, spacing collapsed).

The `LeakageReport` counts, per benchmark and kind, the items and training rows that overlap,
with a few examples, and what could not be compared (benchmark images that cannot be read:
their content is not compared, their COCO id still is). It is JSON-able, to be recorded with the
training run. `raise_on_overlap(report, allow)` raises a `LeakageError` on any overlap unless
`allow` — then the report is marked allowed and returned, to be recorded. Some overlap is
expected and legitimate: VISLA's spatial triplets take their images from COCO train2017 (VISLA,
§3.3), so a model fine-tuned on COCO train captions has seen those images; it must be allowed
explicitly, and is reported.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, Literal, get_args

from lexsem.benchmarks.items import Item, QuadItem
from lexsem.benchmarks.load import LoadedBenchmark
from lexsem.engine.keys import image_key
from lexsem.errors import LexsemError
from lexsem.images.image_store import ImageStore
from lexsem.images.refs import PREFIX_RE, ImageError
from lexsem.train.manifest import Example, Manifest

__all__ = [
    "KINDS",
    "BenchmarkLeakage",
    "LeakageError",
    "LeakageReport",
    "Overlap",
    "check_leakage",
    "coco_id",
    "item_images",
    "normalise_text",
    "raise_on_overlap",
]

Kind = Literal["image", "coco_id", "caption"]
KINDS: tuple[Kind, ...] = get_args(Kind)
MAX_EXAMPLES = 5

_COCO_NAME = re.compile(r"^(?:COCO_[A-Za-z]+20\d\d_)?(\d{12})\.(?:jpe?g|png)$", re.IGNORECASE)
_NON_WORD = re.compile(r"[\W_]+")


class LeakageError(LexsemError):
    """The training data overlaps a benchmark it is judged on, and that was not allowed."""


# --- keys ----------------------------------------------------------------------------------


def coco_id(ref: str) -> int | None:
    """The COCO image id in the file name of an image reference, or None."""
    m = PREFIX_RE.match(ref)
    rel = m.group(2) if m else ref
    name = PurePosixPath(rel.replace("\\", "/")).name
    found = _COCO_NAME.match(name)
    return int(found.group(1)) if found else None


def normalise_text(text: str) -> str:
    """A caption as compared: NFKC, case folded, punctuation removed, spacing collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NON_WORD.sub(" ", folded).split())


def item_images(item: Item) -> tuple[str, ...]:
    """The image references of a benchmark item."""
    if isinstance(item, QuadItem):
        return (item.image0, item.image1)
    return (item.image,) if item.image else ()


# --- the report ----------------------------------------------------------------------------


@dataclass
class Overlap:
    """One kind of overlap with one benchmark: how many items and training rows, examples."""

    items: int = 0
    training_rows: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class BenchmarkLeakage:
    """The overlaps of the training data with one benchmark."""

    benchmark: str
    items: int
    images: int  # distinct image references of the benchmark
    images_compared: int  # of which the content was read and compared
    images_unavailable: int = 0
    unavailable_examples: list[dict[str, str]] = field(default_factory=list)
    overlaps: dict[str, Overlap] = field(default_factory=dict)
    items_overlapping: int = 0  # items with an overlap of any kind

    def has_overlap(self) -> bool:
        return any(o.items for o in self.overlaps.values())


@dataclass
class LeakageReport:
    """Overlaps per benchmark; `allowed`: an overlap was allowed explicitly (recorded)."""

    manifest: dict[str, Any]
    benchmarks: list[BenchmarkLeakage]
    allowed: bool = False

    def has_overlap(self) -> bool:
        return any(b.has_overlap() for b in self.benchmarks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest,
            "allowed": self.allowed,
            "overlap": self.has_overlap(),
            "benchmarks": [_bench_dict(b) for b in self.benchmarks],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def summary(self) -> str:
        """One line per benchmark with an overlap."""
        return "\n".join(_summary_line(b) for b in self.benchmarks if b.has_overlap())


def _bench_dict(b: BenchmarkLeakage) -> dict[str, Any]:
    return {
        "benchmark": b.benchmark,
        "items": b.items,
        "items_overlapping": b.items_overlapping,
        "images": b.images,
        "images_compared": b.images_compared,
        "images_unavailable": b.images_unavailable,
        "unavailable_examples": b.unavailable_examples,
        "overlaps": {
            k: {"items": o.items, "training_rows": o.training_rows, "examples": o.examples}
            for k, o in b.overlaps.items()
        },
    }


def _summary_line(b: BenchmarkLeakage) -> str:
    parts = []
    for kind, o in b.overlaps.items():
        if o.items:
            ex = o.examples[0]
            parts.append(
                f"{o.items} item(s) share {_KIND_WORDS[kind]} with {o.training_rows} training "
                f"row(s), e.g. item {ex['item']} ({ex['benchmark']}) = {ex['training']}"
            )
    return f"{b.benchmark}: " + "; ".join(parts)


_KIND_WORDS = {
    "image": "an image (same content)",
    "coco_id": "a COCO image id",
    "caption": "a text",
}


# --- the training side ---------------------------------------------------------------------


@dataclass
class _Training:
    """Where each key occurs in the manifest: key -> [(row, what)]."""

    image: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    coco_id: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    caption: dict[str, list[tuple[int, str]]] = field(default_factory=dict)


def _training_index(manifest: Manifest, images: ImageStore, sizes: set[int]) -> _Training:
    """Where each key occurs; only images of a byte size some benchmark image has are read
    and hashed (two files of different sizes never have one content key)."""
    index = _Training()
    keys: dict[str, str | None] = {}
    for ex in manifest.examples:
        for ref in (ex.image, ex.negative_image):
            if ref is None:
                continue
            if ref not in keys:
                keys[ref] = _training_key(manifest, ex, ref, images, sizes)
            key = keys[ref]
            if key is not None:
                index.image.setdefault(key, []).append((ex.row, ref))
            cid = coco_id(ref)
            if cid is not None:
                index.coco_id.setdefault(cid, []).append((ex.row, ref))
        for name, text in _texts(ex):
            index.caption.setdefault(normalise_text(text), []).append((ex.row, f"{name} {text!r}"))
    return index


def _training_key(
    manifest: Manifest, ex: Example, ref: str, images: ImageStore, sizes: set[int]
) -> str | None:
    try:
        res = images.resolve(ref)
        if res.path is not None and os.stat(res.path).st_size not in sizes:
            return None
        data = res.read()
    except (ImageError, OSError) as exc:
        why = exc.detail if isinstance(exc, ImageError) else str(exc)
        raise LexsemError(
            f"{manifest.where(ex)}: training image {ref!r} cannot be read: {why}"
        ) from None
    return image_key(data) if len(data) in sizes else None


def _texts(ex: Example) -> list[tuple[str, str]]:
    out = [("caption", ex.caption)] + [("negative", n) for n in ex.negatives]
    if ex.negative_image_caption is not None:
        out.append(("negative_image_caption", ex.negative_image_caption))
    return out


# --- the benchmark side --------------------------------------------------------------------


@dataclass
class _Found:
    """The matches of one kind: item ids, training rows and the first examples."""

    items: set[tuple[str, str]] = field(default_factory=set)
    rows: set[int] = field(default_factory=set)
    examples: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self, item: Item, what: str, hits: Sequence[tuple[int, str]], where: Callable[[int], str]
    ) -> None:
        self.items.add((item.subset, item.id))
        self.rows.update(r for r, _ in hits)
        if len(self.examples) < MAX_EXAMPLES:
            row, training = hits[0]
            self.examples.append(
                {
                    "subset": item.subset,
                    "item": item.id,
                    "benchmark": what,
                    "training_row": row,
                    "training": f"{where(row)} {training}",
                }
            )

    def overlap(self) -> Overlap:
        return Overlap(len(self.items), len(self.rows), self.examples)


class _ImageKeys:
    """Benchmark image ref -> (byte size, content key), read once; unreadable ones recorded."""

    def __init__(self, images: ImageStore, read: bool) -> None:
        self.images = images
        self.read = read
        self.keys: dict[str, tuple[int, str] | None] = {}
        self.unavailable: dict[str, str] = {}

    def key(self, ref: str) -> str | None:
        if ref not in self.keys:
            self.keys[ref] = self._read(ref)
        found = self.keys[ref]
        return None if found is None else found[1]

    def sizes(self) -> set[int]:
        return {k[0] for k in self.keys.values() if k is not None}

    def _read(self, ref: str) -> tuple[int, str] | None:
        if not self.read:
            return None
        try:
            data = self.images.read(ref)
        except ImageError as exc:
            self.unavailable[ref] = f"{exc.reason}: {exc.detail}"
            return None
        return len(data), image_key(data)


def _bench_leakage(
    bench: LoadedBenchmark, training: _Training, keys: _ImageKeys, where: Callable[[int], str]
) -> BenchmarkLeakage:
    found = {kind: _Found() for kind in KINDS}
    refs: set[str] = set()
    for item in bench.items:
        for ref in item_images(item):
            refs.add(ref)
            key = keys.key(ref)
            if key is not None and key in training.image:
                found["image"].add(item, ref, training.image[key], where)
            cid = coco_id(ref)
            if cid is not None and cid in training.coco_id:
                found["coco_id"].add(item, ref, training.coco_id[cid], where)
        for text in item.texts():
            hits = training.caption.get(normalise_text(text))
            if hits:
                found["caption"].add(item, text, hits, where)
    unavailable = [r for r in sorted(refs) if r in keys.unavailable]
    return BenchmarkLeakage(
        benchmark=bench.spec.name,
        items=len(bench.items),
        images=len(refs),
        images_compared=sum(keys.keys.get(r) is not None for r in refs),
        images_unavailable=len(unavailable),
        unavailable_examples=[
            {"image": r, "why": keys.unavailable[r]} for r in unavailable[:MAX_EXAMPLES]
        ],
        overlaps={kind: f.overlap() for kind, f in found.items()},
        items_overlapping=len(set().union(*(f.items for f in found.values()))),
    )


def check_leakage(
    manifest: Manifest,
    benchmarks: Iterable[LoadedBenchmark],
    images: ImageStore,
    *,
    compare_images: bool = True,
) -> LeakageReport:
    """Compare the training data of `manifest` with every item of `benchmarks` (see the
    module doc). `images` reads both sides' images (a benchmark's Hugging Face images must be
    attached to it, as evaluation does); `compare_images=False` compares COCO ids and texts
    only, without reading a benchmark image."""
    benchmarks = list(benchmarks)
    keys = _ImageKeys(images, compare_images)
    for bench in benchmarks:  # the benchmark images first: their sizes filter the training's
        for item in bench.items:
            for ref in item_images(item):
                keys.key(ref)
    training = _training_index(manifest, images, keys.sizes())
    path = manifest.path

    def where(row: int) -> str:
        return f"{path}:{row}" if manifest.format == "jsonl" else f"{path}, row {row}"

    return LeakageReport(
        manifest=manifest.describe(),
        benchmarks=[_bench_leakage(b, training, keys, where) for b in benchmarks],
    )


def raise_on_overlap(report: LeakageReport, allow: bool) -> LeakageReport:
    """`report` unchanged when nothing overlaps; with an overlap, a `LeakageError` naming it,
    unless `allow` — then the report marked ``allowed`` (to be recorded with the run)."""
    if not report.has_overlap():
        return report
    if allow:
        return replace(report, allowed=True)
    raise LeakageError(
        "the training data overlaps benchmarks the model is judged on:\n"
        f"{report.summary()}\n"
        "Train on data without them, or allow the overlap explicitly (allow=True; "
        "TrainConfig.allow_leakage) to record it with the run instead."
    )

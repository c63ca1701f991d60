"""A run's encoding in units of whole batches, computed in other processes: the engine's one
public step for spreading it (`lexsem.sweep.spread` moves units and results, nothing else).

`Encoding(...).units()` plans what the model's request store lacks of a run's plan (the text
embeddings of a text encoder, the image and caption embeddings of a dual encoder; nothing of
other models) in units; a worker computes a unit with `UnitEncoder(model)(unit.shared,
unit.part)`; `Encoding.fill(unit, result)` writes the result to the store under the keys one
process uses.

A unit holds the batches one process makes. One process encodes the texts a store lacks in
chunks (`embed.missing_chunks`: longest first, `CHUNK` texts each) and cuts each chunk into the
encoder's own batches (`embed.batches`); it encodes the images a store lacks in batches of
`batch_size`, in the order of their keys (`image_embed`). A unit is a run of consecutive
batches of one chunk (texts: at most ceil(n / `batch_size`) of them, counted without the model;
the worker forms them) or of the missing images, decoded as one process decodes them
(`decoding`, the image's decode profile, the store's pixel limit): a worker makes exactly the
encoder calls one process makes for those batches. An image that fails is returned as a
failure, not encoded (its batch is encoded without it, as in one process); `fill` then stops
the units where one process would raise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.engine.decoding import DecodeDataset, decode_loader, on_cuda
from lexsem.engine.embed import CHUNK, batches, encode_batch, missing_chunks
from lexsem.engine.image_embed import encode_image_batch
from lexsem.engine.image_scan import pixel_limit, scan_for
from lexsem.engine.keys import content_key
from lexsem.engine.plan import Plan
from lexsem.engine.request_store import RequestStore
from lexsem.engine.runner import CHAT_SCORES, IMAGE, PAIR, SCORER, TEXT
from lexsem.errors import ModelError
from lexsem.images.refs import ImageError, ResolvedImage
from lexsem.models.protocols import fingerprint_key

__all__ = ["UNIT_BATCHES", "Encoding", "Unit", "UnitEncoder", "Unreadable", "batch_ranges"]

UNIT_BATCHES = 8  # batches per unit at most: small enough to share the work, big enough to pay


def batch_ranges(n_batches: int, workers: int, per_unit: int = UNIT_BATCHES) -> list[range]:
    """Consecutive ranges of batch indices covering `n_batches`: at most `per_unit` batches
    each, and at least `workers` ranges when there are that many batches."""
    if n_batches <= 0:
        return []
    n_units = max(math.ceil(n_batches / per_unit), min(workers, n_batches))
    bounds = [i * n_batches // n_units for i in range(n_units + 1)]
    return [range(a, b) for a, b in itertools.pairwise(bounds)]


@dataclass(frozen=True)
class Unit:
    """One unit: `shared` (the same object for the units of one text chunk: send it once) and
    `part` go to the worker; `keys` (a text chunk's store keys) stay with `fill`."""

    shared: tuple[Any, ...]
    part: range | None = None
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unreadable:
    """An image the driver could not read, in its slot of a unit: the worker's decoding
    reports the same failure there, so the batch keeps the composition one process gives it."""

    ref: str
    reason: str
    detail: str

    def read(self) -> bytes:
        raise ImageError(self.detail, ref=self.ref, reason=self.reason)


def _bytes_of(src: ResolvedImage) -> ResolvedImage | Unreadable:
    """The image `src` with its bytes (a worker needs no file system of the driver's), or the
    failure reading it."""
    try:
        return ResolvedImage(src.ref, data=src.read())
    except ImageError as exc:
        return Unreadable(src.ref, exc.reason, exc.detail)


class Encoding:
    """What `model`'s store (in `cache`) lacks of `plan` (made for capabilities `caps`), in
    units of whole batches; `fill` stores their results. `images`: the image store, asked
    for only when there are images to encode. Counts what it plans and stores."""

    def __init__(
        self, model: Any, caps: set[str], plan: Plan, cache: Path, *, batch_size: int,
        workers: int, images: Callable[[], Any], skip_bad_images: bool = False,
        num_workers: int | None = None, exif_transpose: bool | None = None,
    ) -> None:  # fmt: skip
        self.model, self.plan, self.bs, self.workers = model, plan, batch_size, workers
        self.do_texts = TEXT in caps and SCORER not in caps and bool(plan.texts)
        self.do_images = IMAGE in caps and not caps & {PAIR, CHAT_SCORES} and bool(plan.pairs)
        self.key = fingerprint_key(model.fingerprint)
        self._cache, self._images, self._exif = cache, images, exif_transpose
        self.on_error = "skip" if skip_bad_images else "raise"
        self.n_decoders = 0 if num_workers is None else num_workers
        self.n_texts_missing = self.n_images_missing = 0
        self.n_texts_encoded = self.n_images_encoded = self.n_images_failed = 0
        self._store: RequestStore | None = None
        self._dim: list[int] = []
        self._failed = False

    @property
    def store(self) -> RequestStore:
        if self._store is None:
            self._store = RequestStore(self._cache, self.key)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def units(self) -> Iterator[Unit]:
        """The units, planned lazily (texts, then images), until `fill` says stop."""
        if self.do_texts:
            yield from self._text_units()
        if self.do_images:
            yield from self._image_units()

    def _text_units(self) -> Iterator[Unit]:
        texts = self.plan.texts
        keys = [content_key("text", t) for t in texts]
        found = self.store.get_vectors(keys)
        if found:
            self._dim.append(len(next(iter(found.values()))))
        n, chunks = missing_chunks(texts, keys, found, CHUNK)
        self.n_texts_missing += n
        del found
        for i, idx in enumerate(chunks):
            shared = ("texts", i, [texts[j] for j in idx], self.bs)
            for r in batch_ranges(math.ceil(len(idx) / self.bs), self.workers):
                yield Unit(shared, r, tuple(keys[j] for j in idx))

    def _image_units(self) -> Iterator[Unit]:
        images, plan, bs = self._images(), self.plan, self.bs
        limit = pixel_limit(images)
        for profile, pairs in plan.pairs.items():
            refs = list(dict.fromkeys(r for r, _ in pairs))
            scan = scan_for(
                self.model, refs, images, self.store, on_error=self.on_error,
                labels=plan.labels, exif_transpose=self._exif, profiles=profile, batch_size=bs,
            )  # fmt: skip
            keys = list(scan.source_of)
            found = self.store.get_vectors(keys)
            if found and not self._dim:
                self._dim.append(len(next(iter(found.values()))))
            missing = [k for k in keys if k not in found]
            self.n_images_missing += len(missing)
            del found
            for r in batch_ranges(math.ceil(len(missing) / bs), self.workers):
                if self._failed:
                    return
                unit_keys = missing[r.start * bs : r.stop * bs]
                entries = [(k, _bytes_of(scan.source_of[k])) for k in unit_keys]
                profiles = {k: scan.profile_of[k] for k in unit_keys if k in scan.profile_of}
                yield Unit(("images", entries, profiles, limit, bs, self.n_decoders))

    def fill(self, unit: Unit, result: Any) -> bool:
        """Store a unit's result (`UnitEncoder`'s); False: stop, the run raises it."""
        if unit.shared[0] == "texts":
            for idx, vecs in result:
                self._same_dim(vecs)
                self.store.put_vectors([unit.keys[i] for i in idx], vecs)
                self.n_texts_encoded += len(idx)
            return True
        for keys, vecs, failures in result:
            if vecs is not None:
                self._same_dim(vecs)
                self.store.put_vectors(keys, vecs)
                self.n_images_encoded += len(keys)
            self.n_images_failed += len(failures)
            fatal = self.on_error == "raise" or any(r == "preprocess" for _, r, _ in failures)
            if failures and fatal:
                self._failed = True  # the job's run raises it, as one process does
        return not self._failed

    def _same_dim(self, vecs: np.ndarray) -> None:
        """Every vector of the store has one dimension (the first seen, or the store's)."""
        if not self._dim:
            self._dim.append(int(vecs.shape[1]))
        elif vecs.shape[1] != self._dim[0]:
            raise ModelError(
                f"encoder {self.model.name!r} returned dimension {vecs.shape[1]}, expected "
                f"{self._dim[0]} (from the store or earlier batches)"
            )


class UnitEncoder:
    """Computes units with `model` (in a worker): one encoder call per batch."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._chunk: tuple[int, list[np.ndarray]] | None = None  # for the chunk's next unit

    def __call__(self, shared: tuple[Any, ...], part: range | None) -> list[tuple[Any, ...]]:
        if shared[0] == "texts":
            return self._texts(*shared[1:], part)  # type: ignore[arg-type]
        return self._images(*shared[1:])

    def _texts(
        self, index: int, texts: list[str], batch_size: int, part: range
    ) -> list[tuple[Any, ...]]:
        if self._chunk is None or self._chunk[0] != index:
            self._chunk = (index, batches(self.model, texts, batch_size))
        out: list[tuple[Any, ...]] = []
        for idx in self._chunk[1][part.start : part.stop]:
            out.append((idx, encode_batch(self.model, [texts[i] for i in idx], batch_size, None)))
        return out

    def _images(
        self, entries: Sequence[tuple[str, Any]], profiles: dict[str, Any], max_pixels: int,
        batch_size: int, num_workers: int,
    ) -> list[tuple[Any, ...]]:  # fmt: skip
        dataset = DecodeDataset(
            list(entries), self.model.preprocess, profiles=profiles, max_pixels=max_pixels
        )
        loader = decode_loader(dataset, batch_size, num_workers, pin=on_cuda(self.model))
        out: list[tuple[Any, ...]] = []
        for batch in loader:
            keys = [entries[s][0] for s in batch.slots]
            failed = [(entries[s][0], str(r), str(m)) for s, r, m in batch.errors]
            vecs = encode_image_batch(self.model, batch.inputs, len(keys), None) if keys else None
            out.append((keys, vecs, failed))
        return out

"""Encode each unique image once, through the model's content-addressed request store.

`embed_images` is the image twin of `lexsem.engine.embed.embed_texts`:

1. Every distinct reference is resolved by the `ImageStore` and its bytes are read and hashed in
   the main process (a few threads; the bytes are not kept). Images are identified by content:
   two references with the same bytes are one image, encoded once, one cache row
   (``content_key("image", bytes)``, a vector in the model's `RequestStore`, beside the
   text embeddings).
2. What the cache lacks is decoded and preprocessed in a torch ``DataLoader``: workers re-read
   the bytes (checking they still hash to the same key), decode them with PIL as the image's
   decode profile says (`lexsem.images.decode`: EXIF orientation or not, RGB first or the raw
   mode handed to a model that accepts it), call ``encoder.preprocess`` and stack a batch;
   memory is pinned only when the encoder runs on CUDA. A decode failure travels back with the
   batch instead of killing the worker.
3. Each batch is encoded and committed to the cache at once, so an interrupted run resumes
   from what it committed; a run whose images are all cached never calls the encoder.

A missing or undecodable image, or one over the store's pixel limit (`ImageStore.max_pixels`,
checked before its pixels are decoded), raises an `ImageError` naming the reference (and the
item, when the caller passes labels); with ``on_error="skip"`` it is skipped instead: its row
is NaN and the reference is returned in ``skipped``. Unsafe references (outside their root)
always raise.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lexsem.clock import span
from lexsem.engine.decoding import keep_decoded
from lexsem.engine.image_reading import ImageReading
from lexsem.engine.image_scan import Scan, count_reasons
from lexsem.engine.progress_bar import Progress
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ModelError
from lexsem.images.image_store import ImageStore
from lexsem.models.protocols import ImageEncoder

__all__ = ["ImageEmbedStats", "embed_images", "encode_image_batch"]


@dataclass
class ImageEmbedStats:
    n_refs: int = 0  # distinct references asked for
    n_unique: int = 0  # distinct image contents among them (readable ones)
    n_cached: int = 0  # contents served by the cache
    n_encoded: int = 0  # contents encoded now
    n_skipped: int = 0  # references skipped (on_error="skip")
    n_from_memory: int = 0  # contents encoded now from decoded images kept in memory
    num_workers: int = 0
    read_s: float = 0.0  # reading and hashing in the main process
    encode_s: float = 0.0  # waiting for batches + the encoder
    cache_s: float = 0.0
    skip_reasons: dict[str, int] = field(default_factory=dict)


def embed_images(
    encoder: ImageEncoder,
    refs: Sequence[str],
    store: ImageStore,
    cache: RequestStore | None,
    *,
    batch_size: int = 64,
    **options: Any,
) -> tuple[np.ndarray, ImageEmbedStats, list[str]]:
    """Embeddings of the images `refs` (float32, shape ``(len(refs), d)``, in order).

    Each distinct image content is encoded at most once, and not at all when the cache has it.

    Args:
        encoder: the image tower; `preprocess` runs in DataLoader workers.
        refs: image references (see `lexsem.images.image_store`); repeats are fine.
        store: resolves references to bytes.
        cache: the model's request store (None: no cache).
        batch_size: images per `encode_images` call (and per cache commit).
        options: how the images are read (`ImageReading`: `num_workers`, `on_error`, `labels`,
            `exif_transpose`, `profiles`, `progress`, `decoded`).

    Returns:
        ``(embeddings, stats, skipped)``. When no image could be embedded nor was cached, the
        embedding dimension is unknown and the array has shape ``(len(refs), 0)``.
    """
    stats = ImageEmbedStats()
    t0 = time.perf_counter()
    reading = ImageReading(**options)
    scan = reading.scan(encoder, refs, store, cache, batch_size)
    stats.read_s = time.perf_counter() - t0
    stats.n_refs = len(scan.key_of) + len(scan.skipped)
    stats.n_unique = len(scan.source_of)

    keys = list(scan.source_of)
    t1 = time.perf_counter()
    found = cache.get_vectors(keys) if cache is not None and keys else {}
    stats.cache_s += time.perf_counter() - t1
    stats.n_cached = len(found)
    vectors: dict[str, np.ndarray] = dict(found)
    skipped: dict[str, str] = dict(scan.skipped)
    missing = [k for k in keys if k not in found]
    if missing:
        dec = reading.decode(encoder, missing, scan, store, batch_size)
        stats.num_workers, stats.n_from_memory = dec.workers, dec.n_from_memory
        bar = Progress(
            "encoding images", len(missing), unit="images", enabled=reading.progress, store=cache
        )
        with bar:
            t2, cache_before = time.perf_counter(), stats.cache_s
            for batch in dec.batches:
                skipped.update(
                    dec.failures(
                        batch, on_error=reading.on_error, labels=reading.labels, model=encoder.name
                    )
                )
                keep_decoded(reading.decoded, batch, dec.entries)
                if batch.slots:
                    batch_keys = [dec.entries[s][0] for s in batch.slots]
                    vecs = encode_image_batch(encoder, batch.inputs, len(batch_keys), _dim(vectors))
                    if cache is not None:
                        t3 = time.perf_counter()
                        cache.put_vectors(batch_keys, vecs)
                        stats.cache_s += time.perf_counter() - t3
                    vectors.update(zip(batch_keys, vecs, strict=True))
                    stats.n_encoded += len(batch_keys)
                    bar.saved(len(batch_keys) if cache is not None else 0)
                bar.advance(len(batch.slots) + len(batch.errors))
            stats.encode_s = time.perf_counter() - t2 - (stats.cache_s - cache_before)
    stats.n_skipped = len(skipped)
    stats.skip_reasons = count_reasons(skipped)
    out = _rows(refs, scan, vectors, skipped)
    return out, stats, [r for r in dict.fromkeys(refs) if r in skipped]


def _dim(vectors: Mapping[str, np.ndarray]) -> int | None:
    """The embedding dimension so far (from the cache or earlier batches), None before any."""
    return len(next(iter(vectors.values()))) if vectors else None


def encode_image_batch(encoder: ImageEncoder, inputs: Any, n: int, dim: int | None) -> np.ndarray:
    """`encoder.encode_images(inputs)` as float32, checked: n rows of the known dimension."""
    with span("image_tower"):
        vecs = np.asarray(encoder.encode_images(inputs))
    if vecs.ndim != 2 or vecs.shape[0] != n:
        raise ModelError(
            f"image encoder {encoder.name!r} returned shape {vecs.shape} for {n} images"
        )
    if dim is not None and vecs.shape[1] != dim:
        raise ModelError(
            f"image encoder {encoder.name!r} returned dimension {vecs.shape[1]}, "
            f"expected {dim} (from the cache or earlier batches)"
        )
    return vecs.astype(np.float32, copy=False)


def _rows(
    refs: Sequence[str], scan: Scan, vectors: Mapping[str, np.ndarray], skipped: Mapping[str, str]
) -> np.ndarray:
    """One row per ref (NaN for skipped or unreadable ones); width 0 when nothing was embedded."""
    out = np.full((len(refs), _dim(vectors) or 0), np.nan, dtype=np.float32)
    for i, ref in enumerate(refs):
        key = scan.key_of.get(ref)
        vec = vectors.get(key) if key is not None and ref not in skipped else None
        if vec is not None:
            out[i] = vec
    return out

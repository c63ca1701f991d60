"""Score (image, text) pairs with a `PairScorer` (ITM heads, VQAScore, BLIP-2 ITC), through the
model's request store and the decoding pipeline of `lexsem.engine.decoding`: each unique
(image content, text) pair scored once, each image decoded once and paired with all its texts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lexsem.engine.decoding import batch_rows, keep_decoded
from lexsem.engine.image_reading import ImageReading
from lexsem.engine.image_scan import Scan, count_reasons
from lexsem.engine.keys import pair_key
from lexsem.engine.progress_bar import Progress
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ModelError
from lexsem.images.image_store import ImageStore
from lexsem.models.protocols import PairScorer

__all__ = ["PairScoreStats", "pair_scores"]


@dataclass
class PairScoreStats:
    n_pairs: int = 0
    n_unique: int = 0  # distinct (image content, text) pairs
    n_cached: int = 0
    n_scored: int = 0
    n_images: int = 0  # distinct image contents decoded
    n_from_memory: int = 0  # of them, taken from decoded images kept in memory
    n_skipped: int = 0  # pairs skipped (their image was)
    num_workers: int = 0
    read_s: float = 0.0
    score_s: float = 0.0
    cache_s: float = 0.0
    skip_reasons: dict[str, int] = field(default_factory=dict)


def pair_scores(
    scorer: PairScorer,
    pairs: Sequence[tuple[str, str]],
    store: ImageStore,
    cache: RequestStore | None = None,
    **options: Any,
) -> tuple[np.ndarray, PairScoreStats, list[str]]:
    """Scores of (image reference, text) `pairs` by `scorer` (float32, shape ``(len(pairs),)``).

    Identical (image content, text) pairs are scored once; each image needed is decoded and
    preprocessed once (in the DataLoader), then paired with all its texts (one image's texts
    reach `score` in consecutive rows, so a scorer can share work between them).
    `batch_size` is both the number of images per DataLoader batch and the number of pairs per
    `score` call.

    With a `cache` (the scorer's own `RequestStore`, keyed by its fingerprint) each score is
    stored as a float64 scalar under `pair_key` (image content key + text), so a rerun decodes
    no image and one image reached by two references is scored once. Errors and `on_error` /
    `labels` / `exif_transpose` / `profiles` work as in `embed_images` (the image key, hence the
    pair key, includes the decode variant); skipped pairs score NaN and their image references
    are returned in ``skipped``. Options: `batch_size` (32) and those of `ImageReading`
    (`num_workers`, `on_error`, `labels`, `exif_transpose`, `profiles`, `progress`, `decoded`).
    """
    return _pair_values(scorer, pairs, store, cache, **options)


def _pair_values(
    scorer: PairScorer,
    pairs: Sequence[tuple[str, str]],
    store: ImageStore,
    cache: RequestStore | None = None,
    *,
    batch_size: int = 32,
    **options: Any,
) -> tuple[np.ndarray, PairScoreStats, list[str]]:
    stats = PairScoreStats(n_pairs=len(pairs))
    t0 = time.perf_counter()
    reading = ImageReading(**options)
    scan = reading.scan(scorer, [img for img, _ in pairs], store, cache, batch_size)
    stats.read_s = time.perf_counter() - t0
    skipped: dict[str, str] = dict(scan.skipped)
    pkey_of, pair_of = _pair_keys(pairs, scan)
    stats.n_unique = len(pair_of)

    t1 = time.perf_counter()
    found = cache.get_scalars(list(pair_of)) if cache is not None and pair_of else {}
    stats.cache_s += time.perf_counter() - t1
    scores: dict[str, Any] = dict(found)
    stats.n_cached = len(scores)

    todo: dict[str, list[tuple[str, str]]] = {}  # image key -> [(pair key, text)]
    for pk, (ikey, text) in pair_of.items():
        if pk not in scores:
            todo.setdefault(ikey, []).append((pk, text))
    if todo:
        dec = reading.decode(scorer, list(todo), scan, store, batch_size)
        stats.n_images = len(dec.entries)
        stats.num_workers, stats.n_from_memory = dec.workers, dec.n_from_memory
        n_todo = sum(len(v) for v in todo.values())
        bar = Progress("scoring pairs", n_todo, unit="pairs", enabled=reading.progress, store=cache)
        with bar:
            t2, cache_before = time.perf_counter(), stats.cache_s
            for batch in dec.batches:
                failed = dec.failures(
                    batch, on_error=reading.on_error, labels=reading.labels, model=scorer.name
                )
                skipped.update(failed)
                bar.advance(sum(len(todo[dec.entries[s][0]]) for s, *_ in batch.errors))
                keep_decoded(reading.decoded, batch, dec.entries)
                rows = [
                    (row, pk, text)
                    for row, slot in enumerate(batch.slots)
                    for pk, text in todo[dec.entries[slot][0]]
                ]
                for start in range(0, len(rows), batch_size):
                    chunk = rows[start : start + batch_size]
                    vals = _scored(scorer, batch.inputs, chunk)
                    keys = [pk for _, pk, _ in chunk]
                    if cache is not None:
                        t3 = time.perf_counter()
                        cache.put_scalars(keys, vals)
                        stats.cache_s += time.perf_counter() - t3
                    scores.update(zip(keys, vals.tolist(), strict=True))
                    stats.n_scored += len(keys)
                    bar.saved(len(keys) if cache is not None else 0)
                    bar.advance(len(keys))
            stats.score_s = time.perf_counter() - t2 - (stats.cache_s - cache_before)

    out = np.full(len(pairs), np.nan, dtype=np.float32)
    for i, ((img, _), pk) in enumerate(zip(pairs, pkey_of, strict=True)):
        if pk is None or img in skipped:
            stats.n_skipped += 1
        else:
            out[i] = scores[pk]
    stats.skip_reasons = count_reasons(skipped)
    return out, stats, [r for r in dict.fromkeys(img for img, _ in pairs) if r in skipped]


def _pair_keys(
    pairs: Sequence[tuple[str, str]], scan: Scan
) -> tuple[list[str | None], dict[str, tuple[str, str]]]:
    """(the pair key of each pair, None when its image is unreadable; pair key -> (image key,
    text) of the unique readable pairs)."""
    pkey_of: list[str | None] = []
    pair_of: dict[str, tuple[str, str]] = {}
    for img, text in pairs:
        ikey = scan.key_of.get(img)
        pk = pair_key(ikey, text) if ikey is not None else None
        pkey_of.append(pk)
        if pk is not None:
            pair_of.setdefault(pk, (ikey, text))  # type: ignore[arg-type]
    return pkey_of, pair_of


def _scored(scorer: PairScorer, inputs: Any, chunk: list[tuple[int, str, str]]) -> np.ndarray:
    """The scores (float64) of one chunk of (batch row, pair key, text), checked."""
    import torch

    idx = torch.as_tensor([row for row, _, _ in chunk], dtype=torch.long)
    texts = [text for _, _, text in chunk]
    vals = np.asarray(scorer.score(batch_rows(inputs, idx), texts), dtype=np.float64).reshape(-1)
    if vals.shape[0] != len(texts):
        raise ModelError(
            f"pair scorer {scorer.name!r} returned {vals.shape[0]} scores for {len(texts)} pairs"
        )
    return vals

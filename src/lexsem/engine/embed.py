"""Encode unique texts once, through the model's request store.

Missing texts are sorted by length (longest first, so the slowest chunks come first and each
chunk holds texts of similar length; within a chunk the encoder batches by its own token counts,
`LazyTextEncoder.batch_order`, and each of those batches is one encoder call, so progress moves
per batch and the vectors are those of one call for the whole chunk), encoded in chunks, and
committed to the store as they are done (batches at least every second, every chunk at its
end, and the batches done when Ctrl-C arrives): an interrupted run resumes from what was
committed. A run whose texts are all stored
never calls the encoder, so the model is never loaded. Vectors are keyed by
``content_key("text", text)``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.clock import span
from lexsem.engine.keys import content_key
from lexsem.engine.progress_bar import Progress
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ModelError
from lexsem.models.protocols import TextEncoder

__all__ = ["CHUNK", "EmbedStats", "batches", "embed_texts", "encode_batch", "missing_chunks"]

CHUNK = 4096  # texts per model call between store commits


@dataclass
class EmbedStats:
    """What a pass over unique texts did (`embed_texts`, `score_texts`)."""

    n_unique: int = 0
    n_cached: int = 0  # served by the store
    n_encoded: int = 0  # computed now (encoded or scored)
    encode_s: float = 0.0  # in the model
    cache_s: float = 0.0  # in the store


def missing_chunks(
    texts: Sequence[str], keys: Sequence[str], found: Container[str], chunk: int
) -> tuple[int, Iterator[list[int]]]:
    """The indices of texts whose key is not in `found`, longest first, in chunks of `chunk`:
    ``(how many, chunks)``."""
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    missing = [i for i, k in enumerate(keys) if k not in found]
    missing.sort(key=lambda i: -len(texts[i]))
    return len(missing), (missing[s : s + chunk] for s in range(0, len(missing), chunk))


def encode_batch(
    encoder: TextEncoder, texts: list[str], batch_size: int, dim: int | None
) -> np.ndarray:
    """One encoder call on the batch `texts`, as float32, checked: one row per text, of
    dimension `dim` when it is known."""
    with span("text_tower"):
        vecs = np.asarray(encoder.encode(texts, batch_size=batch_size))
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise ModelError(
            f"encoder {encoder.name!r} returned shape {vecs.shape} for {len(texts)} texts"
        )
    if dim is not None and vecs.shape[1] != dim:
        raise ModelError(
            f"encoder {encoder.name!r} returned dimension {vecs.shape[1]}, the store holds {dim}"
        )
    return vecs.astype(np.float32, copy=False)


def batches(encoder: TextEncoder, texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """The batches (indices into `texts`) the encoder would form from `texts` in one call:
    its own `batch_order` (token counts) cut as its `batch_sizes` says (an `openclip:` trimmed
    tower fills a batch up to `batch_size` x context tokens at its width), else every
    `batch_size`, else the given order. Encoding them one call each gives the same batches,
    hence the same vectors, as one call for all."""
    order_of = getattr(encoder, "batch_order", None)
    order = np.asarray(order_of(texts) if order_of is not None else range(len(texts)), np.int64)
    sizes_of = getattr(encoder, "batch_sizes", None)
    if sizes_of is None:
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    if not len(order):
        return []
    sizes = sizes_of([texts[i] for i in order], batch_size)
    if sum(sizes) != len(order) or min(sizes, default=1) < 1:
        raise ModelError(
            f"encoder {encoder.name!r} cut {len(order)} texts into batches of sizes {sizes}"
        )
    return np.split(order, np.cumsum(sizes)[:-1])


COMMIT_EVERY_S = 1.0  # within a chunk, encoded batches are committed at least this often


class _Committer:
    """Commits encoded batches to the store at most every `COMMIT_EVERY_S` (and at the end of
    each chunk): a Ctrl-C loses about a second of work, never a whole chunk, while a fast
    encoder is not slowed by a commit per batch."""

    def __init__(self, store: RequestStore | None, keys: Sequence[str], stats: EmbedStats,
                 bar: Progress) -> None:  # fmt: skip
        self.store, self.keys, self.stats, self.bar = store, keys, stats, bar
        self.idx: list[np.ndarray] = []
        self.vecs: list[np.ndarray] = []
        self.last = time.perf_counter()

    def add(self, idx: np.ndarray, vecs: np.ndarray) -> None:
        self.idx.append(idx)
        self.vecs.append(np.array(vecs, dtype=np.float32))  # a copy: encoders may reuse buffers
        if time.perf_counter() - self.last >= COMMIT_EVERY_S:
            self.flush()

    def flush(self) -> None:
        if not self.idx:
            return
        idx, vecs = np.concatenate(self.idx), np.concatenate(self.vecs)
        self.idx, self.vecs = [], []
        if self.store is not None:
            t = time.perf_counter()
            self.store.put_vectors([self.keys[i] for i in idx], vecs)
            self.stats.cache_s += time.perf_counter() - t
        self.stats.n_encoded += len(idx)
        self.bar.saved(len(idx) if self.store is not None else 0)
        self.last = time.perf_counter()


def _add_rows(commit: _Committer, chunk_idx: np.ndarray, rows: np.ndarray, v: np.ndarray) -> None:
    commit.add(chunk_idx[rows], v)


def _encode_chunk(
    encoder: TextEncoder,
    texts: list[str],
    batch_size: int,
    dim: int | None,
    bar: Progress,
    on_batch: Any = None,
) -> np.ndarray:
    """Embeddings of one chunk, one encoder call per batch (the progress moves per batch);
    `on_batch(indices into texts, vectors)` is called after each."""
    out: np.ndarray | None = None
    for idx in batches(encoder, texts, batch_size):
        vecs = encode_batch(encoder, [texts[i] for i in idx], batch_size, dim)
        if out is None:
            out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            dim = vecs.shape[1]
        out[idx] = vecs
        if on_batch is not None:
            on_batch(idx, vecs)
        bar.advance(len(idx))
    return out if out is not None else np.zeros((0, dim or 0), dtype=np.float32)


def embed_texts(
    encoder: TextEncoder,
    texts: Sequence[str],
    store: RequestStore | None,
    *,
    batch_size: int = 64,
    chunk: int | None = None,
    progress: bool = False,
) -> tuple[np.ndarray, EmbedStats]:
    """Embeddings of the unique `texts` (float32, in order), encoding only what `store` lacks.

    Each chunk of `chunk` texts (default `CHUNK`) is encoded one batch per encoder call
    (`batches`), and its batches are committed to the store at least every `COMMIT_EVERY_S`
    and at the chunk's end; with `progress` a bar (terminal) or periodic lines (piped) move per
    batch, and Ctrl-C raises `Interrupted` saying how many texts the store kept.
    """
    stats = EmbedStats(n_unique=len(texts))
    t0 = time.perf_counter()
    keys = [content_key("text", t) for t in texts]
    found = store.get_vectors(keys) if store is not None else {}
    stats.cache_s += time.perf_counter() - t0
    stats.n_cached = len(found)

    out: np.ndarray | None = None
    if found:
        dim = len(next(iter(found.values())))
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, k in enumerate(keys):
            v = found.get(k)
            if v is not None:
                out[i] = v

    n_missing, chunks = missing_chunks(texts, keys, found, CHUNK if chunk is None else chunk)
    bar = Progress("encoding texts", n_missing, unit="texts", enabled=progress, store=store)
    commit = _Committer(store, keys, stats, bar)
    with bar:
        try:
            for idx in chunks:
                t1, cache_before = time.perf_counter(), stats.cache_s
                dim = None if out is None else out.shape[1]
                vecs = _encode_chunk(
                    encoder, [texts[i] for i in idx], batch_size, dim, bar,
                    functools.partial(_add_rows, commit, np.asarray(idx, dtype=np.int64)),
                )  # fmt: skip
                commit.flush()
                stats.encode_s += time.perf_counter() - t1 - (stats.cache_s - cache_before)
                if out is None:
                    out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
                out[idx] = vecs
        except KeyboardInterrupt:  # the batches encoded since the last commit are kept too
            commit.flush()
            raise
    if out is None:
        out = np.zeros((0, 0), dtype=np.float32)
    return out, stats

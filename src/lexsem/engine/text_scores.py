"""Score unique texts once with a blind `TextScorer`, through the model's request store.

The scalar twin of `lexsem.engine.embed.embed_texts`: each score is a float64 scalar keyed by
``text_score_key(text)`` (`lexsem.engine.keys`) in the scorer's own store; missing texts are scored
longest first in chunks, each chunk committed as soon as it is scored, so an interrupted run
resumes from what was committed and a run whose texts are all stored never calls the scorer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from lexsem.engine.embed import CHUNK, EmbedStats, missing_chunks
from lexsem.engine.keys import text_score_key
from lexsem.engine.progress_bar import Progress
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ModelError
from lexsem.models.protocols import TextScorer

__all__ = ["score_texts"]


def _score(scorer: TextScorer, texts: list[str], batch_size: int) -> np.ndarray:
    vals = np.asarray(scorer.score_texts(texts, batch_size=batch_size), dtype=np.float64)
    if vals.size != len(texts) or (vals.ndim > 1 and vals.shape[0] != len(texts)):
        raise ModelError(
            f"text scorer {scorer.name!r} returned shape {vals.shape} for {len(texts)} texts"
        )
    return vals.reshape(-1)


def score_texts(
    scorer: TextScorer,
    texts: Sequence[str],
    store: RequestStore | None,
    *,
    batch_size: int = 32,
    chunk: int = CHUNK,
    progress: bool = False,
) -> tuple[np.ndarray, EmbedStats]:
    """Scores of the unique `texts` (float64, shape ``(len(texts),)``, in order), scoring only
    what `store` lacks. Each chunk of `chunk` texts is one scorer call and one store commit (the
    scorer batches inside it, by its own token counts; progress moves per chunk)."""
    stats = EmbedStats(n_unique=len(texts))
    t0 = time.perf_counter()
    keys = [text_score_key(t) for t in texts]
    found = store.get_scalars(keys) if store is not None else {}
    stats.cache_s += time.perf_counter() - t0
    stats.n_cached = len(found)
    out = np.array([found.get(k, np.nan) for k in keys], dtype=np.float64)

    n_missing, chunks = missing_chunks(texts, keys, found, chunk)
    bar = Progress("scoring texts", n_missing, unit="texts", enabled=progress, store=store)
    with bar:
        for idx in chunks:
            t1 = time.perf_counter()
            vals = _score(scorer, [texts[i] for i in idx], batch_size)
            stats.encode_s += time.perf_counter() - t1
            out[idx] = vals
            if store is not None:
                t2 = time.perf_counter()
                store.put_scalars([keys[i] for i in idx], vals)
                stats.cache_s += time.perf_counter() - t2
            stats.n_encoded += len(idx)
            bar.saved(len(idx) if store is not None else 0)
            bar.advance(len(idx))
    return out, stats

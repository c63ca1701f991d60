"""Split a job's encoding into units of whole batches, the batches one process would make.

One process encodes the texts a store lacks in chunks (`lexsem.engine.embed.missing_chunks`:
longest first, `CHUNK` texts each) and cuts each chunk into the encoder's own batches
(`lexsem.engine.embed.batches`); it encodes the images a store lacks in batches of
`batch_size`, in the order of their keys (`lexsem.engine.image_embed`). A unit here is a run
of consecutive batches of one chunk (texts) or of the missing images: a worker encoding a
unit makes exactly the encoder calls one process would make for those batches, so every
vector is the one a single process computes. The number of batches of a chunk is known
without the model (its batch order is a permutation, cut every `batch_size`); the worker
computes the order itself.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from lexsem.engine.embed import CHUNK, missing_chunks

__all__ = [
    "UNIT_BATCHES",
    "ImageUnit",
    "TextChunk",
    "batch_ranges",
    "image_units",
    "spread_advice",
    "text_chunks",
]

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
class TextChunk:
    """One chunk of missing texts (as one process forms it) and the batch ranges of its
    units. `index` numbers the chunks of a job."""

    index: int
    texts: list[str]
    keys: list[str]
    units: list[range]


def text_chunks(
    texts: Sequence[str],
    keys: Sequence[str],
    found: Container[str],
    *,
    batch_size: int,
    workers: int,
    chunk: int = CHUNK,
) -> tuple[int, Iterator[TextChunk]]:
    """The texts whose key is not in `found`, in the chunks `embed_texts` forms, each with
    its units: ``(how many texts, chunks)``."""
    n, chunks = missing_chunks(texts, keys, found, chunk)

    def each() -> Iterator[TextChunk]:
        for i, idx in enumerate(chunks):
            n_batches = math.ceil(len(idx) / batch_size)
            yield TextChunk(
                i,
                [texts[j] for j in idx],
                [keys[j] for j in idx],
                batch_ranges(n_batches, workers),
            )

    return n, each()


@dataclass(frozen=True)
class ImageUnit:
    """Consecutive batches of missing image keys: `keys` starts on a batch boundary."""

    keys: list[str]


def image_units(missing: Sequence[str], *, batch_size: int, workers: int) -> list[ImageUnit]:
    """The missing image keys (in the order one process encodes them) in units of whole
    batches of `batch_size`."""
    n_batches = math.ceil(len(missing) / batch_size)
    return [
        ImageUnit(list(missing[r.start * batch_size : r.stop * batch_size]))
        for r in batch_ranges(n_batches, workers)
    ]


def spread_advice(
    n_missing: int, *, batch_size: int, workers: int, cpus_per_actor: float, gpus_per_actor: float,
    cluster_cpus: float,
) -> str | None:  # fmt: skip
    """Why spreading a job's encoding will not pay, or None where it may. The rule:

    - CPU actors that, with the driver, need more cores than the cluster has
      (`workers` × `cpus_per_actor` + 1 > `cluster_cpus`) share them: each gets a slice of what
      one process uses whole, and loads a model of its own (docs/scale.md has measurements);
    - a job with fewer than two batches per actor to encode spends more on the actors'
      start-up (each loads the model) than it saves.
    """
    n_batches = math.ceil(n_missing / batch_size) if batch_size > 0 else 0
    if gpus_per_actor == 0 and workers * max(cpus_per_actor, 1) + 1 > cluster_cpus:
        return (
            f"spreading over {workers} actors of {cpus_per_actor:g} CPU each needs "
            f"{workers * max(cpus_per_actor, 1) + 1:g} cores with the driver; the Ray cluster "
            f"has {cluster_cpus:g}: they share them; expect no speed-up over one process "
            "(--spread 1) unless other work loads the cores"
        )
    if n_batches < 2 * workers:
        return (
            f"only {n_missing} to encode ({n_batches} batches of {batch_size}) over {workers} "
            "actors: each loads the model for under two batches; one process (--spread 1) is "
            f"faster below {2 * workers * batch_size}"
        )
    return None

"""Training batches: the examples of a split, in a seeded order per epoch, decoded and
preprocessed in a DataLoader (the evaluation pipeline's decoding: the same image references,
root confinement and pixel limit), with the captions each regime needs.

The order of epoch `e` is a permutation drawn from (`seed`, `e`) alone, and a batch is a
fixed slice of it, so a run resumed after a kill reads exactly the batches it would have read
(`skip` batches already done). The last incomplete batch of an epoch is dropped (contrastive
losses need a full batch of in-batch negatives).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.images.decode import decode_image
from lexsem.train.manifest import Example

__all__ = ["Examples", "TrainBatch", "batches_per_epoch", "epoch_batches", "epoch_order"]


@dataclass
class TrainBatch:
    """One batch: pixels of the images (and of their hard negative images), the captions (and
    the hard negative captions: `negatives[i]` of image i, k each)."""

    pixels: Any
    captions: list[str]
    negatives: list[list[str]]
    neg_pixels: Any = None
    neg_captions: list[str] | None = None
    hard_negatives: list[str] | None = None  # a negative caption of each hard image (NegCLIP)


class Examples:
    """A map-style dataset of examples (runs in DataLoader workers): (pixels, example index,
    negative-image pixels or None)."""

    def __init__(
        self,
        examples: Sequence[Example],
        images: Any,
        preprocess: Callable[[Any], Any],
        max_pixels: int,
        *,
        negative_images: bool = True,
    ) -> None:
        self.examples, self.images = list(examples), images
        self.preprocess, self.max_pixels = preprocess, max_pixels
        self.negative_images = negative_images  # decode them only for a regime that uses them
        # the negative captions of each image's own row (NegCLIP's hard images are examples)
        self.negatives_of = {ex.image: ex.negatives for ex in self.examples if ex.negatives}

    def __len__(self) -> int:
        return len(self.examples)

    def _pixels(self, ref: str) -> Any:
        image = decode_image(self.images.read(ref), max_pixels=self.max_pixels)
        return self.preprocess(image)

    def __getitem__(self, i: int) -> tuple[Any, int, Any]:
        ex = self.examples[i]
        use = self.negative_images and ex.negative_image
        neg = self._pixels(ex.negative_image) if use else None
        return self._pixels(ex.image), i, neg


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """The order of the examples in `epoch` (a function of `seed` and `epoch` only)."""
    return np.random.default_rng([seed, epoch]).permutation(n)


def batches_per_epoch(n: int, batch_size: int) -> int:
    return n // batch_size


def _collate(data: Examples, k: int) -> Callable[[list[Any]], TrainBatch]:
    examples = data.examples

    def collate(rows: list[tuple[Any, int, Any]]) -> TrainBatch:
        import torch

        exs = [examples[i] for _, i, _ in rows]
        negs = [list(ex.negatives[:k]) for ex in exs]
        has_neg_image = all(n is not None for _, _, n in rows)
        return TrainBatch(
            pixels=torch.stack([p for p, _, _ in rows]),
            captions=[ex.caption for ex in exs],
            negatives=negs,
            neg_pixels=torch.stack([n for _, _, n in rows]) if has_neg_image else None,
            neg_captions=[str(ex.negative_image_caption) for ex in exs] if has_neg_image else None,
            hard_negatives=_hard_negatives(data, exs) if has_neg_image else None,
        )

    return collate


def _hard_negatives(data: Examples, exs: list[Example]) -> list[str] | None:
    found = [data.negatives_of.get(str(ex.negative_image)) for ex in exs]
    return [n[0] for n in found] if all(found) else None  # type: ignore[index]


def epoch_batches(
    data: Examples, batch_size: int, seed: int, epoch: int, *, skip: int = 0,
    num_workers: int = 0, negatives: int = 1, multiple: int = 1,
) -> Iterator[TrainBatch]:  # fmt: skip
    """The batches of `epoch` after the first `skip`, each of `batch_size` examples; an
    epoch has a multiple of `multiple` batches (gradient accumulation: the rest is dropped)."""
    from torch.utils.data import DataLoader

    order = epoch_order(len(data), seed, epoch)
    n_batches = batches_per_epoch(len(data), batch_size) // multiple * multiple
    index = [order[b * batch_size : (b + 1) * batch_size].tolist() for b in range(skip, n_batches)]
    loader = DataLoader(
        data,  # type: ignore[arg-type]  # a map-style dataset
        batch_sampler=index,
        num_workers=num_workers,
        collate_fn=_collate(data, negatives),
    )
    yield from loader

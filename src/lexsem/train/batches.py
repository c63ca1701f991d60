"""Training batches: the examples of a split, in a seeded order per epoch, decoded and
preprocessed in a DataLoader (the evaluation pipeline's decoding: the same image references,
root confinement and pixel limit), with the captions each regime needs.

The order of epoch `e` is a permutation drawn from (`seed`, `e`) alone, and a batch is a
fixed slice of it, so a run resumed after a kill reads exactly the batches it would have read
(`skip` batches already done). The last incomplete batch of an epoch is dropped (contrastive
losses need a full batch of in-batch negatives).

Hard negative captions are keyed by caption: a row's negatives are swaps (or generated
negatives) of its own caption, and NegCLIP's hard image brings the caption
`negative_image_caption` with a negative of that very caption (the row of that image and
caption). Which of a caption's negatives a batch uses is `NegativeDraw`:

- ``per_epoch``: drawn anew every epoch, uniformly, as NegCLIP's loader does
  (``random.choice`` of the row's negatives in its ``CsvDataset.__getitem__``), from a
  generator seeded with (`seed`, `epoch`) alone (`negative_picks`): reproducible, and the
  same for a resumed run;
- ``first``: always the first (one negative per caption, as TROHN-Text has).

`held_out_batches` are the batches of a validation split: in its order, the last one
incomplete, each caption with its first negative (the same batches every epoch).

Every image was checked when the manifest was read (`lexsem.train.manifest`); one that is
missing, unreadable or undecodable when its batch is read (removed or rewritten during the
run) stops the run with a `BatchImageError` naming the image and its manifest line, raised in
the training process whether the batch was read there or in a DataLoader worker. No image is
skipped: a skipped example would change every later batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from lexsem.errors import DataError
from lexsem.images.decode import decode_image
from lexsem.train.manifest import Example

__all__ = [
    "NEGATIVE_DRAWS",
    "NEGATIVE_GENERATOR",
    "BatchImageError",
    "Examples",
    "NegativeDraw",
    "TrainBatch",
    "batches_per_epoch",
    "epoch_batches",
    "epoch_order",
    "hard_negatives_of",
    "held_out_batches",
    "negative_picks",
    "negatives_by_caption",
]

NegativeDraw = Literal["per_epoch", "first"]
NEGATIVE_DRAWS: tuple[str, ...] = get_args(NegativeDraw)
#: Separates the negatives' generator from the batch order's (both seeded with seed, epoch).
_NEGATIVE_STREAM = 1
#: The generator of the ``per_epoch`` draw, as the training record states it.
NEGATIVE_GENERATOR = (
    f"numpy default_rng([seed, epoch, {_NEGATIVE_STREAM}]).random((n, 2)): per example "
    "(manifest order), floor(u * number of negatives) of its caption, then of its hard "
    "image's caption"
)


class BatchImageError(DataError):
    """An image of a batch could not be read or decoded during training."""


@dataclass
class TrainBatch:
    """One batch: pixels of the images (and of their hard negative images), the captions, the
    hard negative caption of each caption (None when a row has none), the captions of the hard
    negative images, and a negative of each of those captions (NegCLIP). `problem`: why an
    image of the batch could not be read (the batch is then empty)."""

    pixels: Any
    captions: list[str]
    negatives: list[str] | None
    neg_pixels: Any = None
    neg_captions: list[str] | None = None
    hard_negatives: list[str] | None = None
    problem: str | None = None


class Examples:
    """A map-style dataset of examples (runs in DataLoader workers): (pixels, example index,
    negative-image pixels or None, None), or (None, index, None, what went wrong) for an image
    that cannot be read. `where(example)` names an example's manifest line in that message."""

    def __init__(
        self,
        examples: Sequence[Example],
        images: Any,
        preprocess: Callable[[Any], Any],
        max_pixels: int,
        *,
        negative_images: bool = True,
        rows: Sequence[Example] | None = None,
        where: Callable[[Example], str] | None = None,
    ) -> None:
        self.examples, self.images = list(examples), images
        self.where = where
        self.preprocess, self.max_pixels = preprocess, max_pixels
        self.negative_images = negative_images  # decode them only for a regime that uses them
        # the negative captions of each (image, caption) row of `rows` (default: `examples`):
        # NegCLIP's hard image is a row, and its negative is a negative of that row's caption
        self.negatives_of = negatives_by_caption(self.examples if rows is None else rows)

    def __len__(self) -> int:
        return len(self.examples)

    def _pixels(self, ref: str) -> Any:
        image = decode_image(self.images.read(ref), max_pixels=self.max_pixels, ref=ref)
        return self.preprocess(image)

    def __getitem__(self, i: int) -> tuple[Any, int, Any, str | None]:
        ex = self.examples[i]
        key, ref = "image", ex.image
        try:
            pixels = self._pixels(ref)
            neg = None
            if self.negative_images and ex.negative_image:
                key, ref = "negative_image", ex.negative_image
                neg = self._pixels(ref)
        except Exception as exc:  # any failure to read or decode: named, in the main process
            return None, i, None, self._problem(ex, key, ref, exc)
        return pixels, i, neg, None

    def _problem(self, ex: Example, key: str, ref: str, exc: Exception) -> str:
        where = self.where(ex) if self.where is not None else f"row {ex.row}"
        reason = getattr(exc, "reason", None)
        if reason == "missing":
            what = f"image {ref!r} is missing"
        elif getattr(exc, "detail", None):  # an ImageError: it names the image
            what = _first_line(exc.detail)  # type: ignore[attr-defined]
        else:
            what = f"image {ref!r} is not a readable image ({type(exc).__name__}: {exc})"
            what = _first_line(what)
        return (
            f"{where}: field {key!r}: {what}; it was readable when the manifest was checked "
            "before training (changed or removed during the run)"
        )


def _first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else "unreadable"


def negatives_by_caption(rows: Sequence[Example]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(image, caption) -> that row's negative captions, for the rows that have some."""
    return {(ex.image, ex.caption): ex.negatives for ex in rows if ex.negatives}


def hard_negatives_of(data: Examples, ex: Example) -> tuple[str, ...]:
    """The negatives of `ex`'s hard image's caption (its row's); () when it has none."""
    if ex.negative_image is None or ex.negative_image_caption is None:
        return ()
    return data.negatives_of.get((ex.negative_image, ex.negative_image_caption), ())


def negative_picks(data: Examples, seed: int, epoch: int, draw: NegativeDraw) -> np.ndarray:
    """Per example, (which of its caption's negatives, which of its hard image caption's
    negatives) epoch `epoch` uses: an (n, 2) integer array. ``per_epoch``: each drawn
    uniformly with one generator seeded with (`seed`, `epoch`) alone, two uniforms per
    example in example order; ``first``: zeros."""
    n = len(data.examples)
    if draw == "first":
        return np.zeros((n, 2), dtype=np.int64)
    if draw != "per_epoch":
        raise ValueError(f"unknown negative draw {draw!r} (draws: {', '.join(NEGATIVE_DRAWS)})")
    u = np.random.default_rng([seed, epoch, _NEGATIVE_STREAM]).random((n, 2))
    sizes = np.array(
        [[len(ex.negatives), len(hard_negatives_of(data, ex))] for ex in data.examples],
        dtype=np.int64,
    ).reshape(n, 2)
    return np.minimum(np.floor(u * sizes).astype(np.int64), np.maximum(sizes - 1, 0))


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    """The order of the examples in `epoch` (a function of `seed` and `epoch` only)."""
    return np.random.default_rng([seed, epoch]).permutation(n)


def batches_per_epoch(n: int, batch_size: int) -> int:
    return n // batch_size


def _collate(data: Examples, picks: np.ndarray) -> Callable[[list[Any]], TrainBatch]:
    examples = data.examples

    def collate(rows: list[tuple[Any, int, Any, str | None]]) -> TrainBatch:
        import torch

        problem = next((p for *_, p in rows if p is not None), None)
        if problem is not None:
            return TrainBatch(pixels=None, captions=[], negatives=None, problem=problem)
        index = [i for _, i, _, _ in rows]
        exs = [examples[i] for i in index]
        has_neg_image = all(n is not None for _, _, n, _ in rows)
        return TrainBatch(
            pixels=torch.stack([p for p, _, _, _ in rows]),
            captions=[ex.caption for ex in exs],
            negatives=_picked([ex.negatives for ex in exs], [picks[i, 0] for i in index]),
            neg_pixels=torch.stack([n for _, _, n, _ in rows]) if has_neg_image else None,
            neg_captions=[str(ex.negative_image_caption) for ex in exs] if has_neg_image else None,
            hard_negatives=_picked(
                [hard_negatives_of(data, ex) for ex in exs], [picks[i, 1] for i in index]
            )
            if has_neg_image
            else None,
        )

    return collate


def _picked(options: list[tuple[str, ...]], picks: list[Any]) -> list[str] | None:
    """The picked negative of each row; None when a row has none."""
    if not all(options):
        return None
    return [o[int(k)] for o, k in zip(options, picks, strict=True)]


def epoch_batches(
    data: Examples, batch_size: int, seed: int, epoch: int, *, skip: int = 0,
    num_workers: int = 0, draw: NegativeDraw = "first", multiple: int = 1,
) -> Iterator[TrainBatch]:  # fmt: skip
    """The batches of `epoch` after the first `skip`, each of `batch_size` examples; an
    epoch has a multiple of `multiple` batches (gradient accumulation: the rest is dropped);
    each caption's negative as `draw` says."""
    order = epoch_order(len(data), seed, epoch)
    n_batches = batches_per_epoch(len(data), batch_size) // multiple * multiple
    index = [order[b * batch_size : (b + 1) * batch_size].tolist() for b in range(skip, n_batches)]
    yield from _loader(data, index, num_workers, negative_picks(data, seed, epoch, draw))


def held_out_batches(
    data: Examples, batch_size: int, *, num_workers: int = 0
) -> Iterator[TrainBatch]:
    """The batches of a validation split: its examples in order, `batch_size` each, the last
    one incomplete (BiVLC's validation DataLoader: no shuffling, no dropped batch), each
    caption with its first negative."""
    n = len(data)
    index = [list(range(b, min(b + batch_size, n))) for b in range(0, n, batch_size)]
    yield from _loader(data, index, num_workers, negative_picks(data, 0, 0, "first"))


def _loader(
    data: Examples, index: list[list[int]], num_workers: int, picks: np.ndarray
) -> Iterator[TrainBatch]:
    """The batches of `index`; a `BatchImageError` for a batch with an unreadable image."""
    from torch.utils.data import DataLoader

    loader = DataLoader(
        data,  # type: ignore[arg-type]  # a map-style dataset
        batch_sampler=index,
        num_workers=num_workers,
        collate_fn=_collate(data, picks),
    )
    for batch in loader:
        if batch.problem is not None:
            raise BatchImageError(batch.problem)
        yield batch

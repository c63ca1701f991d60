"""Decode and preprocess images in a torch ``DataLoader``, for the models that take images.

Workers re-read each image's bytes (checking they still hash to the key the scan found,
`lexsem.engine.image_scan`), decode them with PIL as the image's decode profile says
(`lexsem.images.decode`: EXIF orientation or not, RGB first or the raw mode handed to a model
that accepts it), call the model's ``preprocess`` and stack a batch; memory is pinned only when
the model runs on CUDA. A decode failure travels back with the batch instead of killing the
worker; `Decoding.failures` raises it (naming the image and item) or lists it to skip.
Images decoded by an earlier run (`lexsem.images.memory.DecodedImages`) are preprocessed
without reading their files again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lexsem.clock import overlapped, span
from lexsem.engine.image_scan import Scan, pixel_limit
from lexsem.engine.keys import image_key
from lexsem.errors import ModelError
from lexsem.images.decode import DecodeProfile, decode, flag_profile
from lexsem.images.image_store import ImageStore
from lexsem.images.memory import DecodedImages
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS
from lexsem.images.refs import ImageError, ResolvedImage
from lexsem.models.protocols import ImageRows

__all__ = [
    "DecodeDataset",
    "Decoding",
    "batch_rows",
    "decode_loader",
    "default_num_workers",
    "keep_decoded",
    "on_cuda",
    "start_decoding",
]


def on_cuda(model: Any) -> bool:
    """True when CUDA is available and the model runs there (or says nothing of its device):
    then memory is pinned and more decoding workers are used."""
    import torch

    if not torch.cuda.is_available():
        return False
    device = getattr(model, "device", None)
    return device is None or str(device).startswith("cuda")


def default_num_workers(n_images: int, batch_size: int, *, cuda: bool) -> int:
    """DataLoader workers for decoding `n_images`: none for a single batch (starting workers
    costs more than decoding it), else ``min(8, cpus)`` on CUDA — decoding must keep up with the
    GPU — and ``min(2, cpus - 1)`` on CPU, where the model's forward pass already uses every
    core and two decoders are enough to overlap decoding with it."""
    if n_images <= batch_size:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cpus = os.cpu_count() or 1
    if cuda:
        return max(0, min(8, cpus))
    return max(0, min(2, cpus - 1))


class _Sample(NamedTuple):
    slot: int
    inputs: Any
    reason: str | None  # None: ok; else an ImageError reason or "preprocess"
    message: str | None
    image: Any = None  # the decoded image, sent back to be kept in memory (`DecodedImages`)
    took: tuple[float, float, float] = (0.0, 0.0, 0.0)  # seconds reading, decoding, preprocessing


class _Batch(NamedTuple):
    slots: list[int]
    inputs: Any  # collated inputs of the ok samples, None when there are none
    errors: list[Any]  # (slot, reason, message) per failed sample
    images: list[Any]  # per ok sample: its decoded image to keep, or None
    # seconds the batch took where it was made: reading, decoding, preprocessing (its samples'
    # sums) and in all (collating included)
    took: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)


class DecodeDataset:
    """Reads, verifies, decodes and preprocesses one image per index (runs in workers).

    `profiles` maps a cache key to the decode profile applied to it; keys it lacks are decoded
    as `flag_profile(exif_transpose)`. An image over `max_pixels` is refused before its
    pixels are decoded (reason ``"too-large"``). `decoded` holds images decoded by an earlier
    run (by key: they are preprocessed without reading the file again); with `keep`, every
    image decoded here is sent back with its sample, to be kept for later runs.
    """

    def __init__(
        self,
        entries: list[tuple[str, ResolvedImage]],
        preprocess: Callable[[Any], Any],
        exif_transpose: bool = True,
        profiles: Mapping[str, DecodeProfile] | None = None,
        max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
        decoded: Mapping[str, Any] | None = None,
        keep: bool = False,
    ) -> None:
        self.entries = entries  # (cache key, where to read it)
        self.preprocess = preprocess
        self.default = flag_profile(exif_transpose)
        self.profiles = dict(profiles or {})
        self.max_pixels = max_pixels
        self.decoded = dict(decoded or {})
        self.keep = keep

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, slot: int) -> _Sample:
        key, src = self.entries[slot]
        image = self.decoded.get(key)
        if image is not None:  # a copy: a `preprocess` may change its image in place
            return self._preprocessed(slot, image.copy(), None, (0.0, 0.0))
        profile = self.profiles.get(key, self.default)
        t0 = time.perf_counter()
        try:
            data = src.read()
        except ImageError as exc:
            return _Sample(slot, None, exc.reason, exc.detail)
        if image_key(data, profile=profile) != key:
            return _Sample(slot, None, "changed", f"image {src.ref!r} changed while being read")
        t1 = time.perf_counter()
        try:
            image = decode(data, profile, max_pixels=self.max_pixels, ref=src.ref)
        except ImageError as exc:  # over the pixel limit, or not decodable
            return _Sample(slot, None, exc.reason, exc.detail)
        took = (t1 - t0, time.perf_counter() - t1)
        return self._preprocessed(slot, image, image if self.keep else None, took)

    def _preprocessed(self, slot: int, image: Any, keep: Any, took: tuple[float, float]) -> _Sample:
        t0 = time.perf_counter()
        try:
            inputs = self.preprocess(image)
        except Exception as exc:
            return _Sample(slot, None, "preprocess", f"{type(exc).__name__}: {exc}")
        return _Sample(slot, inputs, None, None, keep, (*took, time.perf_counter() - t0))


def _stacked(inputs: list[Any]) -> Any:
    """A batch of preprocessed inputs: stacked tensors, or the decoded images themselves as
    `ImageRows` (a backend whose processor takes images of any size hands them through)."""
    from PIL import Image
    from torch.utils.data import default_collate

    if inputs and isinstance(inputs[0], Image.Image):
        return ImageRows(inputs)
    return default_collate(inputs)


def _collate(samples: list[_Sample]) -> _Batch:
    t0 = time.perf_counter()
    ok = [s for s in samples if s.reason is None]
    inputs = _stacked([s.inputs for s in ok]) if ok else None
    errors = [(s.slot, s.reason, s.message) for s in samples if s.reason is not None]
    parts = [sum(s.took[i] for s in samples) for i in range(3)]
    took = (*parts, sum(parts) + time.perf_counter() - t0)
    return _Batch([s.slot for s in ok], inputs, errors, [s.image for s in ok], took)  # type: ignore[arg-type]


def timed_batches(batches: Iterator[_Batch]) -> Iterator[_Batch]:
    """`batches`, the wait for each timed as the run's `image_decode` (`lexsem.clock`), and
    the work each took where it was made counted beside the run (`overlapped`)."""
    while True:
        with span("image_decode"):
            batch = next(batches, None)
        if batch is None:
            return
        for name, seconds in zip(_DECODE_WORK, batch.took, strict=True):
            overlapped(name, seconds)
        yield batch


_DECODE_WORK = ("decode_read", "decode_pil", "decode_preprocess", "decode")


def _dataset(
    entries: list[tuple[str, ResolvedImage]],
    preprocess: Callable[[Any], Any],
    scan: Scan,
    store: ImageStore,
    decoded: DecodedImages | None,
) -> DecodeDataset:
    """The decoding dataset of `entries`, fed from and feeding `decoded` when given."""
    kept = {k: decoded.get(k) for k, _ in entries if k in decoded} if decoded is not None else {}
    return DecodeDataset(
        entries,
        preprocess,
        profiles=scan.profile_of,
        max_pixels=pixel_limit(store),
        decoded=kept,
        keep=decoded is not None and decoded.has_room,
    )


def keep_decoded(
    decoded: DecodedImages | None, batch: _Batch, entries: list[tuple[str, Any]]
) -> None:
    if decoded is None:
        return
    for slot, image in zip(batch.slots, batch.images, strict=True):
        if image is not None:
            decoded.put(entries[slot][0], image)


def decode_loader(dataset: DecodeDataset, batch_size: int, num_workers: int, pin: bool) -> Any:
    from torch.utils.data import DataLoader

    kwargs: dict[str, Any] = {}
    if num_workers > 0:
        kwargs["prefetch_factor"] = 2
    return DataLoader(
        dataset,  # type: ignore[arg-type]  # a map-style dataset (len + getitem)
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        collate_fn=_collate,
        pin_memory=pin,
        persistent_workers=False,
        **kwargs,
    )


def _batch_failure(
    errors: list[Any],
    slot_refs: Callable[[int], list[str]],
    *,
    on_error: str,
    labels: Mapping[str, str] | None,
    model: str,
) -> dict[str, str]:
    """Raise for the first failure of a batch, or return {ref: reason} of what to skip."""
    skipped: dict[str, str] = {}
    for slot, reason, message in errors:
        refs = slot_refs(slot)
        if reason == "preprocess":
            raise ModelError(f"{model!r}: preprocess failed on image {refs[0]!r}: {message}")
        if on_error != "skip":
            item = labels.get(refs[0]) if labels else None
            also = f" (also used as {', '.join(map(repr, refs[1:]))})" if len(refs) > 1 else ""
            raise ImageError(f"{message}{also}", ref=refs[0], reason=reason, item=item)
        for ref in refs:
            skipped[ref] = reason
    return skipped


@dataclass
class Decoding:
    """The DataLoader over the images (by key) that must be decoded now, and how to name them."""

    entries: list[tuple[str, ResolvedImage]]  # (image key, where to read it), by slot
    refs_of: dict[str, list[str]]  # image key -> the references that reach it
    workers: int
    n_from_memory: int  # images the DataLoader takes from `decoded`, not from their files
    batches: Any  # iterator of _Batch; its workers have started

    def failures(
        self, batch: _Batch, *, on_error: str, labels: Mapping[str, str] | None, model: str
    ) -> dict[str, str]:
        """{ref: reason} of what to skip in `batch` (or raise, as `_batch_failure` says)."""
        if not batch.errors:
            return {}
        return _batch_failure(
            batch.errors,
            lambda slot: self.refs_of[self.entries[slot][0]],
            on_error=on_error,
            labels=labels,
            model=model,
        )


def start_decoding(
    model: Any,
    keys: Sequence[str],
    scan: Scan,
    store: ImageStore,
    decoded: DecodedImages | None,
    batch_size: int,
    num_workers: int | None,
) -> Decoding:
    """Start the DataLoader decoding and preprocessing the images `keys` for `model`."""
    refs_of: dict[str, list[str]] = {}
    for ref, key in scan.key_of.items():
        refs_of.setdefault(key, []).append(ref)
    entries = [(k, scan.source_of[k]) for k in keys]
    cuda = on_cuda(model)
    workers = (
        default_num_workers(len(entries), batch_size, cuda=cuda)
        if num_workers is None
        else max(0, int(num_workers))
    )
    dataset = _dataset(entries, model.preprocess, scan, store, decoded)
    # workers start here, before any progress-bar thread exists
    with span("image_decode"):
        batches = timed_batches(iter(decode_loader(dataset, batch_size, workers, pin=cuda)))
    return Decoding(entries, refs_of, workers, len(dataset.decoded), batches)


def batch_rows(inputs: Any, index: Any) -> Any:
    """Rows `index` of a collated batch (a tensor, or a dict/list/tuple of them; the same
    image objects for `ImageRows`)."""
    if isinstance(inputs, ImageRows):
        return ImageRows(inputs[int(i)] for i in index)
    if isinstance(inputs, Mapping):
        return {k: batch_rows(v, index) for k, v in inputs.items()}
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(batch_rows(v, index) for v in inputs)
    return inputs[index]

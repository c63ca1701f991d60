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

`pair_scores` runs (image, text) pairs through the same decoding pipeline for `PairScorer`
models (ITM heads, VQAScore); see its docstring for its cache.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np

from lexsem.engine.keys import content_key, request_key
from lexsem.engine.progress import Progress
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ModelError
from lexsem.images.decode import (
    DecodeProfile,
    Profiles,
    accepts_raw_mode,
    decode,
    legacy_profile,
    profile_lookup,
)
from lexsem.images.image_store import ImageStore
from lexsem.images.memory import DecodedImages
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS
from lexsem.images.refs import ImageError, ResolvedImage
from lexsem.models.protocols import Answerer, ImageEncoder, ImageRows, PairScorer

__all__ = [
    "ImageEmbedStats",
    "PairScoreStats",
    "default_num_workers",
    "embed_images",
    "image_key",
    "pair_answers",
    "pair_key",
    "pair_scores",
]

OnError = Literal["raise", "skip"]

READ_THREADS = 8  # threads reading + hashing image files in the main process


def image_key(
    data: bytes, *, exif_transpose: bool = True, profile: DecodeProfile | None = None
) -> str:
    """The store key of an image decoded as `profile` (default: RGB first, EXIF orientation as
    `exif_transpose` says): ``content_key("image", profile.key_tag + data)``.

    Decodes that may give other pixels (EXIF orientation or not, RGB first or raw mode) get keys
    of their own: the bytes are prefixed with a tag no image file starts with (none for RGB
    first with EXIF orientation, so those keys are plain content keys).
    """
    p = profile if profile is not None else legacy_profile(exif_transpose)
    return content_key("image", p.key_tag + data)


def pair_key(image: str, text: str) -> str:
    """The store key of the score of (the image whose `image_key` is `image`, `text`): a
    scalar in the scorer's own database, keyed by the image's content, never its reference."""
    return request_key("pair_score", image=image, text=text)


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


# ---------------------------------------------------------------------------- workers


def _on_cuda(model: Any) -> bool:
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


class _Batch(NamedTuple):
    slots: list[int]
    inputs: Any  # collated inputs of the ok samples, None when there are none
    errors: list[Any]  # (slot, reason, message) per failed sample
    images: list[Any]  # per ok sample: its decoded image to keep, or None


class _DecodeDataset:
    """Reads, verifies, decodes and preprocesses one image per index (runs in workers).

    `profiles` maps a cache key to the decode profile applied to it; keys it lacks are decoded
    as `legacy_profile(exif_transpose)`. An image over `max_pixels` is refused before its
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
        self.default = legacy_profile(exif_transpose)
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
            return self._preprocessed(slot, image.copy(), None)
        profile = self.profiles.get(key, self.default)
        try:
            data = src.read()
        except ImageError as exc:
            return _Sample(slot, None, exc.reason, exc.detail)
        if image_key(data, profile=profile) != key:
            return _Sample(slot, None, "changed", f"image {src.ref!r} changed while being read")
        try:
            image = decode(data, profile, max_pixels=self.max_pixels, ref=src.ref)
        except ImageError as exc:  # over the pixel limit
            return _Sample(slot, None, exc.reason, exc.detail)
        except Exception as exc:
            msg = f"image {src.ref!r} cannot be decoded: {type(exc).__name__}: {exc}"
            return _Sample(slot, None, "undecodable", msg)
        return self._preprocessed(slot, image, image if self.keep else None)

    def _preprocessed(self, slot: int, image: Any, keep: Any) -> _Sample:
        try:
            inputs = self.preprocess(image)
        except Exception as exc:
            return _Sample(slot, None, "preprocess", f"{type(exc).__name__}: {exc}")
        return _Sample(slot, inputs, None, None, keep)


def _stacked(inputs: list[Any]) -> Any:
    """A batch of preprocessed inputs: stacked tensors, or the decoded images themselves as
    `ImageRows` (a backend whose processor takes images of any size hands them through)."""
    from PIL import Image
    from torch.utils.data import default_collate

    if inputs and isinstance(inputs[0], Image.Image):
        return ImageRows(inputs)
    return default_collate(inputs)


def _collate(samples: list[_Sample]) -> _Batch:
    ok = [s for s in samples if s.reason is None]
    inputs = _stacked([s.inputs for s in ok]) if ok else None
    errors = [(s.slot, s.reason, s.message) for s in samples if s.reason is not None]
    return _Batch([s.slot for s in ok], inputs, errors, [s.image for s in ok])


def _dataset(
    entries: list[tuple[str, ResolvedImage]],
    preprocess: Callable[[Any], Any],
    scan: _Scan,
    store: ImageStore,
    decoded: DecodedImages | None,
) -> _DecodeDataset:
    """The decoding dataset of `entries`, fed from and feeding `decoded` when given."""
    kept = {k: decoded.get(k) for k, _ in entries if k in decoded} if decoded is not None else {}
    return _DecodeDataset(
        entries,
        preprocess,
        profiles=scan.profile_of,
        max_pixels=_limit(store),
        decoded=kept,
        keep=decoded is not None and decoded.has_room,
    )


def _keep_decoded(
    decoded: DecodedImages | None, batch: _Batch, entries: list[tuple[str, Any]]
) -> None:
    if decoded is None:
        return
    for slot, image in zip(batch.slots, batch.images, strict=True):
        if image is not None:
            decoded.put(entries[slot][0], image)


def _loader(dataset: _DecodeDataset, batch_size: int, num_workers: int, pin: bool) -> Any:
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


# ---------------------------------------------------------------------------- scanning


@dataclass
class _Scan:
    key_of: dict[str, str]  # ref -> cache key (readable refs)
    source_of: dict[str, ResolvedImage]  # cache key -> where to read it (first ref seen)
    skipped: dict[str, str]  # ref -> reason (on_error="skip")
    profile_of: dict[str, DecodeProfile] = field(default_factory=dict)  # cache key -> decode


# Image keys of files, by what `os.stat` says of them: the bytes are not read and hashed again
# while a file is unchanged. In this process (`_key_memo`), and across processes as records of
# the model's request store (`_file_memo_key`), as git's index does: a file is taken as
# unchanged while its device, inode, size, mtime and ctime are (a write in place changes the
# ctime, which no user can set back; a replaced file has another inode). A file modified less
# than `_SETTLE_S` ago is hashed and not remembered, so that a write in the same clock tick as
# the hash is never missed.
_key_memo: dict[tuple[Any, ...], str] = {}
_key_memo_lock = threading.Lock()
_SETTLE_S = 2.0


def _stat_id(res: ResolvedImage, profile: DecodeProfile) -> tuple[Any, ...] | None:
    """What identifies the file of `res` (None: no file, or it cannot be statted)."""
    if res.path is None:
        return None
    try:
        st = os.stat(res.path)
    except OSError:
        return None
    return (
        str(res.path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
        profile.key_tag.hex(),
    )  # fmt: skip


def _settled(ident: tuple[Any, ...]) -> bool:
    newest = max(ident[4], ident[5]) / 1e9
    return time.time() - newest > _SETTLE_S


def _file_memo_key(ident: tuple[Any, ...]) -> str:
    return request_key("image_file_key", file=list(ident))


def _key_of(res: ResolvedImage, profile: DecodeProfile, ident: tuple[Any, ...] | None) -> str:
    if ident is None:
        return image_key(res.read(), profile=profile)  # no file, or a clear ImageError
    with _key_memo_lock:
        key = _key_memo.get(ident)
    if key is None:
        key = image_key(res.read(), profile=profile)
        if _settled(ident):
            with _key_memo_lock:
                _key_memo[ident] = key
    return key


def _limit(store: ImageStore) -> int:
    """The store's pixel limit (`lexsem.images.pixels`; the default for a store without one)."""
    return int(getattr(store, "max_pixels", DEFAULT_MAX_IMAGE_PIXELS))


def _check_on_error(on_error: str) -> None:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")


def _scan(
    store: ImageStore,
    refs: Sequence[str],
    *,
    on_error: str,
    labels: Mapping[str, str] | None,
    profile_of: Callable[[str], DecodeProfile],
    memo: RequestStore | None = None,
) -> _Scan:
    """Resolve, read and hash every distinct reference (in order; a few threads), each under
    the decode profile `profile_of(ref)`. Files whose keys `memo` remembers (unchanged since,
    by `os.stat`) are not read."""

    def fail(ref: str, exc: ImageError) -> ImageError:
        if on_error == "skip" and exc.skippable:
            return exc
        raise exc.for_item(labels.get(ref) if labels else None) from None

    def locate(ref: str) -> tuple[ResolvedImage | None, Any, ImageError | None]:
        try:
            res = store.resolve(ref)
        except ImageError as exc:
            return None, None, fail(ref, exc)
        return res, _stat_id(res, profile_of(ref)), None

    def key(ref: str, res: ResolvedImage, ident: Any) -> tuple[str | None, ImageError | None]:
        try:
            return _key_of(res, profile_of(ref), ident), None
        except ImageError as exc:
            return None, fail(ref, exc)

    unique = list(dict.fromkeys(refs))
    located = _threaded(locate, [(r,) for r in unique])
    remembered = _remembered(memo, [ident for _, ident, _ in located])
    todo = [
        (ref, res, ident)
        for ref, (res, ident, err) in zip(unique, located, strict=True)
        if err is None and (ident is None or ident not in remembered)
    ]
    hashed = dict(zip([t[0] for t in todo], _threaded(key, todo), strict=True))
    scan = _Scan({}, {}, {})
    learned: list[tuple[Any, str]] = []
    for ref, (res, ident, err) in zip(unique, located, strict=True):
        if err is None and ref in hashed:
            k, err = hashed[ref]
            if k is not None and ident is not None and _settled(ident):
                learned.append((ident, k))
        elif err is None:
            k = remembered[ident]
        if err is not None:
            scan.skipped[ref] = err.reason
            continue
        assert res is not None and k is not None
        scan.key_of[ref] = k
        scan.source_of.setdefault(k, res)
        scan.profile_of.setdefault(k, profile_of(ref))
    _remember(memo, learned)
    return scan


def _threaded(fn: Callable[..., Any], args: list[tuple[Any, ...]]) -> list[Any]:
    if len(args) <= 16:
        return [fn(*a) for a in args]
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        return list(pool.map(lambda a: fn(*a), args))


def _remembered(memo: RequestStore | None, idents: list[Any]) -> dict[Any, str]:
    """The image keys `memo` holds for these files (unchanged since they were hashed)."""
    idents = [i for i in dict.fromkeys(idents) if i is not None]
    if memo is None or not idents:
        return {}
    by_key = {_file_memo_key(i): i for i in idents}
    found = memo.get_records(list(by_key))
    out = {by_key[k]: v for k, v in found.items() if isinstance(v, str)}
    with _key_memo_lock:
        _key_memo.update(out)
    return out


def _remember(memo: RequestStore | None, learned: list[tuple[Any, str]]) -> None:
    if memo is not None and learned and memo.writable:
        memo.put_records([_file_memo_key(i) for i, _ in learned], [k for _, k in learned])


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


def _count_reasons(skipped: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for reason in skipped.values():
        out[reason] = out.get(reason, 0) + 1
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------- decoding


@dataclass
class _Decoding:
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


def _start_decoding(
    model: Any,
    keys: Sequence[str],
    scan: _Scan,
    store: ImageStore,
    decoded: DecodedImages | None,
    batch_size: int,
    num_workers: int | None,
) -> _Decoding:
    """Start the DataLoader decoding and preprocessing the images `keys` for `model`."""
    refs_of: dict[str, list[str]] = {}
    for ref, key in scan.key_of.items():
        refs_of.setdefault(key, []).append(ref)
    entries = [(k, scan.source_of[k]) for k in keys]
    cuda = _on_cuda(model)
    workers = (
        default_num_workers(len(entries), batch_size, cuda=cuda)
        if num_workers is None
        else max(0, int(num_workers))
    )
    dataset = _dataset(entries, model.preprocess, scan, store, decoded)
    # workers start here, before any progress-bar thread exists
    batches = iter(_loader(dataset, batch_size, workers, pin=cuda))
    return _Decoding(entries, refs_of, workers, len(dataset.decoded), batches)


def _scan_for(
    model: Any, refs: Sequence[str], store: ImageStore, cache: RequestStore | None, *,
    on_error: str, labels: Mapping[str, str] | None, exif_transpose: bool | None,
    profiles: Profiles, batch_size: int,
) -> _Scan:  # fmt: skip
    """The checked arguments' scan of `refs` under `model`'s decode profiles."""
    _check_on_error(on_error)
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    profile_of = profile_lookup(profiles, exif_transpose, accepts_raw_mode(model))
    return _scan(store, refs, on_error=on_error, labels=labels, profile_of=profile_of, memo=cache)


# ---------------------------------------------------------------------------- embeddings


def embed_images(
    encoder: ImageEncoder,
    refs: Sequence[str],
    store: ImageStore,
    cache: RequestStore | None,
    *,
    batch_size: int = 64,
    num_workers: int | None = None,
    on_error: OnError = "raise",
    labels: Mapping[str, str] | None = None,
    exif_transpose: bool | None = None,
    profiles: Profiles = None,
    progress: bool = False,
    decoded: DecodedImages | None = None,
) -> tuple[np.ndarray, ImageEmbedStats, list[str]]:
    """Embeddings of the images `refs` (float32, shape ``(len(refs), d)``, in order).

    Each distinct image content is encoded at most once, and not at all when the cache has it.

    Args:
        encoder: the image tower; `preprocess` runs in DataLoader workers.
        refs: image references (see `lexsem.images.image_store`); repeats are fine.
        store: resolves references to bytes.
        cache: the model's request store (None: no cache).
        batch_size: images per `encode_images` call (and per cache commit).
        num_workers: DataLoader workers; None picks `default_num_workers`.
        on_error: ``"raise"`` (default) — a missing/undecodable image raises `ImageError`
            naming it; ``"skip"`` — its row is NaN and it is listed in the returned `skipped`.
        labels: optional ``{ref: item label}`` named in errors (e.g. ``"sugarcrepe/swap_obj#12"``).
        exif_transpose: without `profiles`, apply the EXIF orientation (None: yes); with
            them, a boolean forces it on or off for every profile, None keeps each profile's.
        profiles: how each image is decoded (`lexsem.images.decode`): one `DecodeProfile` or
            preset name for all refs, or a mapping ref -> profile covering every ref; None:
            RGB first, EXIF as `exif_transpose` says (lexsem's behaviour before profiles). A
            ``rgb="model"`` profile hands raw-mode images only to a model that declares
            ``accepts_raw_mode = True``; other models get them converted to RGB first. Every
            decode variant has cache keys of its own (`image_key`).
        progress: show progress (`lexsem.engine.progress`): a bar on a terminal, periodic
            lines when stderr is piped; it moves per batch. Ctrl-C raises `Interrupted`, which
            says how many images were saved in `cache`.
        decoded: decoded images kept in memory across calls (`lexsem.images.memory`): images
            it holds are not read nor decoded again, images decoded now are added while its
            budget has room.

    Returns:
        ``(embeddings, stats, skipped)``. When no image could be embedded nor was cached, the
        embedding dimension is unknown and the array has shape ``(len(refs), 0)``.
    """
    stats = ImageEmbedStats()
    t0 = time.perf_counter()
    scan = _scan_for(
        encoder, refs, store, cache, on_error=on_error, labels=labels,
        exif_transpose=exif_transpose, profiles=profiles, batch_size=batch_size,
    )  # fmt: skip
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
        dec = _start_decoding(encoder, missing, scan, store, decoded, batch_size, num_workers)
        stats.num_workers, stats.n_from_memory = dec.workers, dec.n_from_memory
        bar = Progress(
            "encoding images", len(missing), unit="images", enabled=progress, store=cache
        )
        with bar:
            t2, cache_before = time.perf_counter(), stats.cache_s
            for batch in dec.batches:
                skipped.update(
                    dec.failures(batch, on_error=on_error, labels=labels, model=encoder.name)
                )
                _keep_decoded(decoded, batch, dec.entries)
                if batch.slots:
                    batch_keys = [dec.entries[s][0] for s in batch.slots]
                    vecs = _encoded(encoder, batch.inputs, len(batch_keys), _dim(vectors))
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
    stats.skip_reasons = _count_reasons(skipped)
    out = _rows(refs, scan, vectors, skipped)
    return out, stats, [r for r in dict.fromkeys(refs) if r in skipped]


def _dim(vectors: Mapping[str, np.ndarray]) -> int | None:
    """The embedding dimension so far (from the cache or earlier batches), None before any."""
    return len(next(iter(vectors.values()))) if vectors else None


def _encoded(encoder: ImageEncoder, inputs: Any, n: int, dim: int | None) -> np.ndarray:
    """`encoder.encode_images(inputs)` as float32, checked: n rows of the known dimension."""
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
    refs: Sequence[str], scan: _Scan, vectors: Mapping[str, np.ndarray], skipped: Mapping[str, str]
) -> np.ndarray:
    """One row per ref (NaN for skipped or unreadable ones); width 0 when nothing was embedded."""
    out = np.full((len(refs), _dim(vectors) or 0), np.nan, dtype=np.float32)
    for i, ref in enumerate(refs):
        key = scan.key_of.get(ref)
        vec = vectors.get(key) if key is not None and ref not in skipped else None
        if vec is not None:
            out[i] = vec
    return out


# ---------------------------------------------------------------------------- pair scores


def _take(inputs: Any, index: Any) -> Any:
    """Rows `index` of a collated batch (a tensor, or a dict/list/tuple of them; the same
    image objects for `ImageRows`)."""
    if isinstance(inputs, ImageRows):
        return ImageRows(inputs[int(i)] for i in index)
    if isinstance(inputs, Mapping):
        return {k: _take(v, index) for k, v in inputs.items()}
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(_take(v, index) for v in inputs)
    return inputs[index]


@dataclass(frozen=True)
class _PairValues:
    """What a pair request yields and where it is kept: scores (float64 scalars in the store,
    NaN for a skipped pair) or free-form answers (JSON records ``{"text": ...}``, None)."""

    what: str  # for the progress bar
    get: Callable[[RequestStore, list[str]], dict[str, Any]]
    put: Callable[[RequestStore, list[str], list[Any]], None]
    compute: Callable[[Any, Any, list[tuple[int, str, str]]], list[Any]]
    empty: Callable[[int], np.ndarray]


def _get_answers(cache: RequestStore, keys: list[str]) -> dict[str, Any]:
    return {k: r["text"] for k, r in cache.get_records(keys).items()}


def _put_answers(cache: RequestStore, keys: list[str], texts: list[Any]) -> None:
    cache.put_records(keys, [{"text": t} for t in texts])


_SCORES = _PairValues(
    "scoring pairs",
    lambda cache, keys: cache.get_scalars(keys),
    lambda cache, keys, vals: cache.put_scalars(keys, np.asarray(vals, dtype=np.float64)),
    lambda model, inputs, chunk: _scored(model, inputs, chunk).tolist(),
    lambda n: np.full(n, np.nan, dtype=np.float32),
)
_ANSWERS = _PairValues(
    "answering",
    _get_answers,
    _put_answers,
    lambda model, inputs, chunk: _answered(model, inputs, chunk),
    lambda n: np.full(n, None, dtype=object),
)


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
    are returned in ``skipped``. Options: `batch_size` (32), `num_workers`, `on_error`,
    `labels`, `exif_transpose`, `profiles`, `progress`, `decoded`.
    """
    return _pair_values(_SCORES, scorer, pairs, store, cache, **options)


def pair_answers(
    answerer: Answerer,
    pairs: Sequence[tuple[str, str]],
    store: ImageStore,
    cache: RequestStore | None = None,
    **options: Any,
) -> tuple[np.ndarray, PairScoreStats, list[str]]:
    """The free-form answers of `answerer` to (image reference, prompt) `pairs` (an object
    array of str; None where the image was skipped), as `pair_scores` makes scores: each
    unique (image content, prompt) asked once, each answer stored as a JSON record under its
    pair key as soon as its batch is answered, so a rerun asks nothing again."""
    return _pair_values(_ANSWERS, answerer, pairs, store, cache, **options)


def _pair_values(
    kind: _PairValues,
    scorer: Any,
    pairs: Sequence[tuple[str, str]],
    store: ImageStore,
    cache: RequestStore | None = None,
    *,
    batch_size: int = 32,
    num_workers: int | None = None,
    on_error: OnError = "raise",
    labels: Mapping[str, str] | None = None,
    exif_transpose: bool | None = None,
    profiles: Profiles = None,
    progress: bool = False,
    decoded: DecodedImages | None = None,
) -> tuple[np.ndarray, PairScoreStats, list[str]]:
    stats = PairScoreStats(n_pairs=len(pairs))
    t0 = time.perf_counter()
    scan = _scan_for(
        scorer, [img for img, _ in pairs], store, cache, on_error=on_error, labels=labels,
        exif_transpose=exif_transpose, profiles=profiles, batch_size=batch_size,
    )  # fmt: skip
    stats.read_s = time.perf_counter() - t0
    skipped: dict[str, str] = dict(scan.skipped)
    pkey_of, pair_of = _pair_keys(pairs, scan)
    stats.n_unique = len(pair_of)

    t1 = time.perf_counter()
    found = kind.get(cache, list(pair_of)) if cache is not None and pair_of else {}
    stats.cache_s += time.perf_counter() - t1
    scores: dict[str, Any] = dict(found)
    stats.n_cached = len(scores)

    todo: dict[str, list[tuple[str, str]]] = {}  # image key -> [(pair key, text)]
    for pk, (ikey, text) in pair_of.items():
        if pk not in scores:
            todo.setdefault(ikey, []).append((pk, text))
    if todo:
        dec = _start_decoding(scorer, list(todo), scan, store, decoded, batch_size, num_workers)
        stats.n_images = len(dec.entries)
        stats.num_workers, stats.n_from_memory = dec.workers, dec.n_from_memory
        n_todo = sum(len(v) for v in todo.values())
        bar = Progress(kind.what, n_todo, unit="pairs", enabled=progress, store=cache)
        with bar:
            t2, cache_before = time.perf_counter(), stats.cache_s
            for batch in dec.batches:
                failed = dec.failures(batch, on_error=on_error, labels=labels, model=scorer.name)
                skipped.update(failed)
                bar.advance(sum(len(todo[dec.entries[s][0]]) for s, *_ in batch.errors))
                _keep_decoded(decoded, batch, dec.entries)
                rows = [
                    (row, pk, text)
                    for row, slot in enumerate(batch.slots)
                    for pk, text in todo[dec.entries[slot][0]]
                ]
                for start in range(0, len(rows), batch_size):
                    chunk = rows[start : start + batch_size]
                    vals = kind.compute(scorer, batch.inputs, chunk)
                    keys = [pk for _, pk, _ in chunk]
                    if cache is not None:
                        t3 = time.perf_counter()
                        kind.put(cache, keys, vals)
                        stats.cache_s += time.perf_counter() - t3
                    scores.update(zip(keys, vals, strict=True))
                    stats.n_scored += len(keys)
                    bar.saved(len(keys) if cache is not None else 0)
                    bar.advance(len(keys))
            stats.score_s = time.perf_counter() - t2 - (stats.cache_s - cache_before)

    out = kind.empty(len(pairs))
    for i, ((img, _), pk) in enumerate(zip(pairs, pkey_of, strict=True)):
        if pk is None or img in skipped:
            stats.n_skipped += 1
        else:
            out[i] = scores[pk]
    stats.skip_reasons = _count_reasons(skipped)
    return out, stats, [r for r in dict.fromkeys(img for img, _ in pairs) if r in skipped]


def _pair_keys(
    pairs: Sequence[tuple[str, str]], scan: _Scan
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


def _answered(answerer: Answerer, inputs: Any, chunk: list[tuple[int, str, str]]) -> list[str]:
    """The answers (str) to one chunk of (batch row, pair key, prompt), checked."""
    import torch

    idx = torch.as_tensor([row for row, _, _ in chunk], dtype=torch.long)
    prompts = [text for _, _, text in chunk]
    answers = list(answerer.answer(_take(inputs, idx), prompts))
    if len(answers) != len(prompts) or not all(isinstance(a, str) for a in answers):
        raise ModelError(
            f"answerer {answerer.name!r} returned {len(answers)} answers for {len(prompts)} "
            "prompts (one str each expected)"
        )
    return answers


def _scored(scorer: PairScorer, inputs: Any, chunk: list[tuple[int, str, str]]) -> np.ndarray:
    """The scores (float64) of one chunk of (batch row, pair key, text), checked."""
    import torch

    idx = torch.as_tensor([row for row, _, _ in chunk], dtype=torch.long)
    texts = [text for _, _, text in chunk]
    vals = np.asarray(scorer.score(_take(inputs, idx), texts), dtype=np.float64).reshape(-1)
    if vals.shape[0] != len(texts):
        raise ModelError(
            f"pair scorer {scorer.name!r} returned {vals.shape[0]} scores for {len(texts)} pairs"
        )
    return vals

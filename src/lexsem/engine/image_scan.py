"""Find every image a run needs: resolve each distinct reference, read and hash its bytes (a few
threads, in the main process; the bytes are not kept), under its decode profile.

Images are identified by content: two references with the same bytes (and decode profile) are
one image, one key (`lexsem.engine.keys.image_key`). A missing or unreadable image, or one over
the store's pixel limit, raises an `ImageError` naming the reference (and the item, when the
caller passes labels); with ``on_error="skip"`` it is skipped instead and listed with its
reason. Unsafe references (outside their root) always raise.

Image keys of files are remembered by what `os.stat` says of them (see `_key_memo`), in this
process and across processes in the model's request store (`lexsem.engine.keys.file_memo_key`),
so an unchanged file is not read and hashed again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from lexsem.engine.keys import file_memo_key, image_key
from lexsem.engine.request_store import RequestStore
from lexsem.images.decode import DecodeProfile, Profiles, accepts_raw_mode, profile_lookup
from lexsem.images.image_store import ImageStore
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS
from lexsem.images.refs import ImageError, ResolvedImage

__all__ = [
    "OnError",
    "Scan",
    "check_on_error",
    "count_reasons",
    "pixel_limit",
    "scan_for",
    "scan_images",
]

OnError = Literal["raise", "skip"]

READ_THREADS = 8  # threads reading + hashing image files in the main process


@dataclass
class Scan:
    key_of: dict[str, str]  # ref -> cache key (readable refs)
    source_of: dict[str, ResolvedImage]  # cache key -> where to read it (first ref seen)
    skipped: dict[str, str]  # ref -> reason (on_error="skip")
    profile_of: dict[str, DecodeProfile] = field(default_factory=dict)  # cache key -> decode


# Image keys of files, by what `os.stat` says of them: the bytes are not read and hashed again
# while a file is unchanged. In this process (`_key_memo`), and across processes as records of
# the model's request store (`file_memo_key`), as git's index does: a file is taken as
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


def pixel_limit(store: ImageStore) -> int:
    """The store's pixel limit (`lexsem.images.pixels`; the default for a store without one)."""
    return int(getattr(store, "max_pixels", DEFAULT_MAX_IMAGE_PIXELS))


def check_on_error(on_error: str) -> None:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")


def scan_images(
    store: ImageStore,
    refs: Sequence[str],
    *,
    on_error: str,
    labels: Mapping[str, str] | None,
    profile_of: Callable[[str], DecodeProfile],
    memo: RequestStore | None = None,
) -> Scan:
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
    scan = Scan({}, {}, {})
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
    by_key = {file_memo_key(i): i for i in idents}
    found = memo.get_records(list(by_key))
    out = {by_key[k]: v for k, v in found.items() if isinstance(v, str)}
    with _key_memo_lock:
        _key_memo.update(out)
    return out


def _remember(memo: RequestStore | None, learned: list[tuple[Any, str]]) -> None:
    if memo is not None and learned and memo.writable:
        memo.put_records([file_memo_key(i) for i, _ in learned], [k for _, k in learned])


def count_reasons(skipped: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for reason in skipped.values():
        out[reason] = out.get(reason, 0) + 1
    return dict(sorted(out.items()))


def scan_for(
    model: Any, refs: Sequence[str], store: ImageStore, cache: RequestStore | None, *,
    on_error: str, labels: Mapping[str, str] | None, exif_transpose: bool | None,
    profiles: Profiles, batch_size: int,
) -> Scan:  # fmt: skip
    """The checked arguments' scan of `refs` under `model`'s decode profiles."""
    check_on_error(on_error)
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    profile_of = profile_lookup(profiles, exif_transpose, accepts_raw_mode(model))
    return scan_images(
        store, refs, on_error=on_error, labels=labels, profile_of=profile_of, memo=cache
    )

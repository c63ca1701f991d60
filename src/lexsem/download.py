"""Fetch the public benchmark files, verified by sha256, and find them offline.

`resolve_source` is what the loaders call: it looks in the offline data folder, then in the
download cache, then (unless offline) downloads. `download` fetches one file robustly: retries
with exponential backoff, resumes partial transfers with HTTP Range requests (also across
commands: a failed download keeps its partial file), verifies the checksum and only then moves
the file into place, under a file lock so that concurrent processes do not collide.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

import lexsem.paths as paths
from lexsem._version import __version__
from lexsem.atomic import atomic_path, fsync_dir
from lexsem.digests import file_sha256, remember_file, sha256_file
from lexsem.errors import DataError, DownloadError

if TYPE_CHECKING:  # httpx is imported when a download starts: a run from local files needs none
    import httpx

__all__ = [
    "cache_path",
    "download",
    "fetch_part",
    "fill_data_folder",
    "part_path",
    "remove_if_present",
    "resolve_source",
]

_MAX_BACKOFF = 30.0  # seconds; cap on one sleep between attempts
_RETRY_STATUS = frozenset({408, 425, 429})  # retried besides every 5xx


@dataclass(frozen=True)
class SourceFile:
    """One public file: where it lives in a data folder, where to fetch it, its sha256."""

    name: str  # path relative to the data folder / download cache, e.g. "visla/Generic_VISLA.tsv"
    url: str
    sha256: str


def _matches(path: Path, expected: str, *, memo: bool = True) -> tuple[bool, str]:
    actual = sha256_file(path) if memo else file_sha256(path)
    return actual == expected.strip().lower(), actual


def cache_path(source: SourceFile, cache_root: Path) -> Path:
    """Where `download` puts `source` under `cache_root`: `<cache_root>/data/<source.name>`."""
    return Path(cache_root) / "data" / source.name


def part_path(dest: Path) -> Path:
    """The partial-download file beside `dest` (fixed name, so an interrupted fetch resumes)."""
    return dest.with_name(f".{dest.name}.download.part")


def _offline_hint(source: SourceFile) -> str:
    return (
        f"offline? put the file at <data folder>/{source.name} and pass --data-dir "
        "or set LEXSEM_DATA_DIR"
    )


def remove_if_present(path: Path) -> None:
    """Delete `path`; a file that is not there is no error."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


class _Retry(Exception):
    """A transient failure of one attempt (5xx, short body, unusable range reply)."""


def _content_range_start(value: str | None) -> int | None:
    """The first byte of a `Content-Range: bytes a-b/total` header, or None if unparsable."""
    if not value:
        return None
    unit, _, rng = value.strip().partition(" ")
    if unit.lower() != "bytes":
        return None
    start, _, _ = rng.partition("-")
    try:
        return int(start)
    except ValueError:
        return None


def _attempt(client: httpx.Client, url: str, part: Path) -> None:
    """One GET of `url` into `part`, resuming from its current size when it already exists.

    Returns once `part` holds a complete response body. Raises `_Retry` or an httpx transport
    error for transient failures, `DownloadError` for permanent ones (e.g. 404).
    """
    import httpx

    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with client.stream("GET", url, headers=headers) as resp:
        status = resp.status_code
        if status == 416 and offset:
            remove_if_present(part)  # the partial file is longer than the remote one: start over
            raise _Retry(f"HTTP 416 for a resume from byte {offset}; restarting")
        if status >= 500 or status in _RETRY_STATUS:
            raise _Retry(f"HTTP {status} {resp.reason_phrase}")
        if status == 206 and offset:
            if _content_range_start(resp.headers.get("content-range")) != offset:
                remove_if_present(part)
                raise _Retry(f"server answered the range request badly ({resp.headers!r})")
            mode = "ab"
        elif status == 200:
            mode = "wb"  # no resume support (or nothing to resume): full restart
        else:
            raise DownloadError(f"HTTP {status} {resp.reason_phrase}")
        encoded = resp.headers.get("content-encoding", "identity").lower() != "identity"
        length_header = resp.headers.get("content-length")
        expected_len = int(length_header) if length_header and length_header.isdigit() else None
        try:
            with open(part, mode) as fh:
                for chunk in resp.iter_bytes():  # as received: keep partial data
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        except (httpx.TransportError, OSError):
            if encoded:
                remove_if_present(part)  # decoded bytes do not line up with byte ranges: no resume
            raise
        received = resp.num_bytes_downloaded
        if expected_len is not None and received < expected_len:
            if encoded:
                remove_if_present(part)
            raise _Retry(f"incomplete read: got {received} of {expected_len} bytes")


def fetch_part(
    source: SourceFile, part: Path, *, retries: int, timeout: float, backoff: float
) -> None:
    """Fill `part` with the body of `source.url`, retrying transient failures (resuming from
    the bytes `part` already holds when the server serves ranges)."""
    import httpx

    attempts = max(1, retries)
    last_error: BaseException | None = None
    headers = {"User-Agent": f"lexsem/{__version__}", "Accept-Encoding": "identity"}
    with httpx.Client(
        follow_redirects=True, timeout=httpx.Timeout(timeout), headers=headers
    ) as client:
        for attempt in range(attempts):
            if attempt:
                time.sleep(min(_MAX_BACKOFF, backoff * 2 ** (attempt - 1)))
            try:
                _attempt(client, source.url, part)
                return
            except DownloadError as exc:
                remove_if_present(part)
                raise DownloadError(
                    f"could not download {source.url}: {exc}; {_offline_hint(source)}"
                ) from None
            except (_Retry, httpx.TransportError, OSError) as exc:
                last_error = exc
    detail = f"{type(last_error).__name__}: {last_error}" if last_error else "unknown error"
    raise DownloadError(
        f"could not download {source.url} after {attempts} attempt(s); last error: {detail}"
        f"{_kept(part)}; {_offline_hint(source)}"
    )


def _kept(part: Path) -> str:
    """Keep a partial file for the next command to resume from (an empty one is removed)."""
    size = part.stat().st_size if part.exists() else 0
    if not size:
        remove_if_present(part)
        return ""
    return f"; the {size} bytes received are kept in {part} and the next download resumes there"


def download(
    source: SourceFile,
    cache_root: Path,
    *,
    retries: int = 4,
    timeout: float = 60.0,
    backoff: float = 0.5,
) -> Path:
    """Download `source` into `<cache_root>/data/<source.name>` and return that path.

    `retries` is the total number of attempts; between attempts the wait doubles, starting at
    `backoff` seconds. Connection errors, timeouts, short bodies and 5xx answers are retried; a
    partial file is resumed with a Range request (a 200 answer restarts from scratch). The file
    appears at the destination only once complete and matching `source.sha256`; on failure
    nothing is left there. When the attempts run out, the bytes received so far are kept in the
    hidden partial file beside it (`.<name>.download.part`), and the next call resumes from
    them (restarting once if the result fails its checksum); a checksum mismatch or a permanent
    error (e.g. 404) removes it. A lock on `<dest>.lock` serialises
    concurrent downloads of the same file; a valid file already present is returned as is.
    """
    dest = cache_path(source, cache_root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    with FileLock(f"{dest}.lock"):
        if dest.is_file():
            if _matches(dest, source.sha256)[0]:
                return dest
            remove_if_present(dest)  # stale or corrupted copy
        resumed = part.exists()
        fetch_part(source, part, retries=retries, timeout=timeout, backoff=backoff)
        ok, actual = _matches(part, source.sha256, memo=False)
        if not ok and resumed:
            # The partial file may have come from an older version of the file: start over once.
            remove_if_present(part)
            fetch_part(source, part, retries=retries, timeout=timeout, backoff=backoff)
            ok, actual = _matches(part, source.sha256, memo=False)
        if not ok:
            remove_if_present(part)
            raise DownloadError(
                f"checksum mismatch for {source.url}: expected sha256 {source.sha256}, "
                f"got {actual}; nothing was saved (the file may have changed upstream)"
            )
        os.replace(part, dest)
        remember_file(dest, "sha256", actual)
        fsync_dir(dest.parent)
    return dest


def resolve_source(
    source: SourceFile,
    *,
    data_dir: Path | None = None,
    cache_root: Path | None = None,
    offline: bool | None = None,
    verify: bool = True,
) -> Path:
    """The local path of `source`: from the data folder, the cache, or a fresh download.

    1. A data folder (`data_dir`, else $LEXSEM_DATA_DIR) is authoritative: the file must be at
       `<data_dir>/<source.name>` (DataError if missing) and, with `verify`, match the pinned
       sha256 (DataError otherwise).
    2. Else a cached copy under `<cache_root>/data/` that verifies is used; a corrupted one is
       deleted (and re-downloaded unless offline).
    3. Else, when offline (`offline`, else $LEXSEM_OFFLINE / $HF_HUB_OFFLINE), DownloadError
       explains how to provide the file.
    4. Else the file is downloaded (see `download`).

    `cache_root` defaults to `paths.cache_dir()`.
    """
    folder = data_dir if data_dir is not None else paths.data_dir()
    if folder is not None:
        folder = Path(folder)
        local = folder / source.name
        if not local.is_file():
            raise DataError(
                f"{source.name} is missing from the data folder {folder} "
                f"(expected it at {local}; the data folder uses the same names as the downloads)",
                file=local,
            )
        if verify:
            ok, actual = _matches(local, source.sha256)
            if not ok:
                raise DataError(
                    f"sha256 {actual} does not match the expected {source.sha256}: the file "
                    f"differs from the pinned public version ({source.url})",
                    file=local,
                )
        return local

    root = Path(cache_root) if cache_root is not None else paths.cache_dir()
    cached = cache_path(source, root)
    is_offline = paths.offline() if offline is None else offline
    corrupted = False
    if cached.is_file():
        if not verify or _matches(cached, source.sha256)[0]:
            return cached
        corrupted = True
        if is_offline:
            with FileLock(f"{cached}.lock"):
                if cached.is_file() and not _matches(cached, source.sha256)[0]:
                    remove_if_present(cached)
                elif cached.is_file():
                    return cached  # another process replaced it meanwhile

    if is_offline:
        why = (
            f"the cached copy {cached} failed its sha256 check and was removed"
            if corrupted
            else f"{source.name} is not in the cache ({cached})"
        )
        raise DownloadError(
            f"{why}, and lexsem is offline (LEXSEM_OFFLINE / HF_HUB_OFFLINE), so it cannot be "
            f"downloaded from {source.url}. Either run `lexsem download <benchmark>` on a "
            f"connected machine (it fills {root / 'data'}; copy that folder into this machine's "
            f"cache, or point LEXSEM_CACHE_DIR / --cache-dir at it), or pass --data-dir DIR "
            f"(or set LEXSEM_DATA_DIR=DIR) with the file at DIR/{source.name}"
        )
    return download(source, root)


def fill_data_folder(
    source: SourceFile, folder: Path, *, cache_root: Path, offline: bool | None = None
) -> tuple[Path, bool]:
    """Put `source` at `<folder>/<source.name>` (the data folder's layout, which `--data-dir`
    and $LEXSEM_DATA_DIR read): `(its path, whether it was copied now)`. A file there that
    matches the pinned sha256 is kept; one that does not is refused (DataError, never
    replaced: it may be someone's own version). The bytes come from the download cache,
    downloaded first when missing there; the copy appears whole or not at all."""
    dest = Path(folder) / source.name
    if dest.is_file():
        ok, actual = _matches(dest, source.sha256)
        if ok:
            return dest, False
        raise DataError(
            f"already there with sha256 {actual}, not the pinned {source.sha256}: lexsem does not "
            "replace it (move it away to fetch the pinned file)",
            file=dest,
        )
    cached = cache_path(source, cache_root)
    if not (cached.is_file() and _matches(cached, source.sha256)[0]):
        if paths.offline() if offline is None else offline:
            raise DownloadError(
                f"{source.name} is not in the cache ({cached}) and lexsem is offline "
                "(LEXSEM_OFFLINE / HF_HUB_OFFLINE), so it cannot be downloaded from "
                f"{source.url}"
            )
        cached = download(source, cache_root)
    with atomic_path(dest) as tmp, open(cached, "rb") as src, open(tmp, "wb") as out:
        while block := src.read(1 << 20):
            out.write(block)
    return dest, True

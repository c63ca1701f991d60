"""Generate images through the request store: every image is stored as it is made, a rerun
generates or sends nothing already made, failed requests are never stored
(`lexsem.models.image_gen`: one `ImageRequest` per image).

A request's key is `image_request_key(<fingerprint>, <request body>)` (`lexsem.engine.keys`):
the generator (weights and every generation setting, or endpoint and model), the prompt, the
image's index and seed, its saved size and any extra parameters. The stored record is
``{"text": <sha256 of the PNG>, "response": {"sha256", "bytes", ...}}`` (an API's response
without the image); the PNG bytes themselves are a file of `ImageFiles`, named by their
sha256, stored once whatever the number of builds that use them. A record whose file is gone
or has another size is a miss: the image is made again (and its record replaced).

A local generator (`generate`, `diffusers:`) makes the missing images `batch_size` at a time,
each batch stored when it is done, so a killed build loses at most the batch in progress. An
API (`send`, `openai-image:`) is sent to the way chat requests are (`chat.send_requests`:
concurrency, retries with backoff, a server that is not there stops the run at once).
`replay_only` refuses to make anything; `max_requests` refuses, before anything is made, a
run that would make more.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lexsem.atomic import atomic_path
from lexsem.engine.chat import ChatStats, failed_message, send_requests
from lexsem.engine.keys import image_request_key
from lexsem.engine.progress_bar import Progress
from lexsem.errors import LexsemError, ModelError
from lexsem.models.image_gen import ImageRequest, batches, is_local

__all__ = ["ImageFiles", "image_key", "image_records", "is_whole"]

FILES_DIR = "generated_images"  # under the cache root


class ImageFiles:
    """Generated PNG files by sha256: ``ROOT/<first 2 hex digits>/<sha256>.png``, each written
    once, atomically."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / f"{sha256}.png"

    def put(self, data: bytes) -> str:
        """Store `data` (once); its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        path = self.path(sha)
        if not self.has(sha, len(data)):
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                Path(tmp).write_bytes(data)
        return sha

    def has(self, sha256: str, size: int | None) -> bool:
        """Whether the file of `sha256` is there with `size` bytes."""
        try:
            found = os.stat(self.path(sha256)).st_size
        except OSError:
            return False
        return size is None or found == size


def image_key(model: Any, request: ImageRequest) -> str:
    """The store key of `request` asked of `model`."""
    return image_request_key(model.fingerprint, model.request_body(request))


def is_whole(record: Any, files: ImageFiles) -> bool:
    """Whether a stored record names an image whose file is there, whole."""
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        return False
    response = record.get("response")
    size = response.get("bytes") if isinstance(response, dict) else None
    return files.has(record["text"], size if isinstance(size, int) else None)


class _Replacing:
    """The store as `send_requests` writes to it: a record replaces the one of an image whose
    file is gone."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.path = getattr(store, "path", None)

    def put_records(self, keys: Sequence[str], docs: Sequence[Any]) -> None:
        if self.store is not None:
            self.store.put_records(keys, docs, replace=True)


class _Storing:
    """An API image model as `send_requests` sees it: `send` keeps the PNG in the image files
    and answers its sha256 as the text."""

    def __init__(self, model: Any, files: ImageFiles) -> None:
        self.model, self.files = model, files
        self.name = model.name

    def request_body(self, request: ImageRequest) -> dict[str, Any]:
        return self.model.request_body(request)

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        data, raw = self.model.send(client, body)
        sha = self.files.put(data)
        return sha, {**raw, "sha256": sha, "bytes": len(data)}


def image_records(
    model: Any,
    requests: Sequence[ImageRequest],
    store: Any,
    files: ImageFiles,
    *,
    replay_only: bool = False,
    max_requests: int | None = None,
    batch_size: int = 4,
    concurrency: int | None = None,
    retries: int = 5,
    backoff: float = 1.0,
    progress: bool = False,
) -> tuple[list[dict[str, Any]], ChatStats]:
    """The stored records of `requests` (``{"text": sha256, "response"}``), in order, making
    the missing images (see the module doc)."""
    stats = ChatStats()
    keys = [image_key(model, r) for r in requests]
    unique = list(dict.fromkeys(keys))
    stats.n_requests = len(unique)
    found = store.get_records(unique) if store is not None else {}
    records = {k: v for k, v in found.items() if is_whole(v, files)}
    stats.n_stored = len(records)
    todo = [k for k in unique if k not in records]
    if todo and replay_only:
        raise LexsemError(
            f"replay only: {len(todo)} image requests have no stored image in "
            f"{getattr(store, 'path', None) or 'the store (disabled)'}"
        )
    if todo and max_requests is not None and len(todo) > max_requests:
        raise LexsemError(
            f"{len(todo)} image requests would be made, more than --max-requests "
            f"{max_requests}; nothing was made (raise the limit, or select fewer items)"
        )
    if not todo:
        return [records[k] for k in keys], stats
    request_of = dict(zip(keys, requests, strict=True))
    if is_local(model):
        _generate(model, todo, request_of, store, files, records, stats, batch_size, progress)
    else:
        got, sent = send_requests(
            _Storing(model, files), todo, request_of, _Replacing(store),
            concurrency=concurrency or int(getattr(model, "concurrency", 4) or 4),
            retries=retries, backoff=backoff, progress=progress,
        )  # fmt: skip
        records.update(got)
        stats.n_sent, stats.n_attempts = sent.n_sent, sent.n_attempts
        stats.failures, stats.stopped = sent.failures, sent.stopped
        if stats.failures:
            raise ModelError(
                failed_message(model, stats, len(todo), retries, "image requests", "images")
            )
    return [records[k] for k in keys], stats


def _generate(
    model: Any, todo: list[str], request_of: dict[str, ImageRequest], store: Any,
    files: ImageFiles, records: dict[str, dict[str, Any]], stats: ChatStats, batch_size: int,
    progress: bool,
) -> None:  # fmt: skip
    """Make the images of `todo` on this machine, a batch at a time, each batch stored."""
    bar = Progress("generating", len(todo), unit="images", enabled=progress, store=store)
    with bar:
        for chunk in batches(todo, batch_size):
            images = model.generate([request_of[k] for k in chunk])
            if len(images) != len(chunk):
                raise ModelError(f"{model.name}: {len(images)} images for {len(chunk)} requests")
            docs = []
            for data in images:
                sha = files.put(data)
                docs.append({"text": sha, "response": {"sha256": sha, "bytes": len(data)}})
            if store is not None:
                store.put_records(list(chunk), docs, replace=True)
            records.update(zip(chunk, docs, strict=True))
            stats.n_sent += len(chunk)
            stats.n_attempts += 1
            bar.advance(len(chunk))
            bar.saved(len(chunk))

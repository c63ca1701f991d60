"""Ask a chat model prompts about images, through the request store: every answer is stored as
it arrives, a rerun sends nothing already answered, and failed requests are never stored.

A request's key is `request_key("chat", model=<fingerprint>, body=<the request body with the
image replaced by its content key>)`: the image's bytes (never its path), the rendered
messages, the model and every generation parameter. The stored record holds the answer's text
and the raw response JSON.

Sending: at most `concurrency` requests at a time; a `RetryableError` (HTTP 429, 5xx,
time-out, dropped connection, an answer that is not a chat completion) is retried up to
`retries` times with exponential backoff (`backoff`, 2x`backoff`, ...); a request still failing
is reported, not stored, and the next run sends it again. `replay_only` refuses to send
anything (a miss is an error naming how many are missing); `max_requests` refuses, before
anything is sent, a run that would send more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lexsem.engine.keys import content_key, request_key
from lexsem.engine.store import RequestStore
from lexsem.errors import LexsemError, ModelError, RetryableError

__all__ = ["ChatStats", "chat_answers", "chat_key"]


@dataclass
class ChatStats:
    n_requests: int = 0  # distinct requests asked for
    n_stored: int = 0  # served by the store
    n_sent: int = 0  # answered now
    n_attempts: int = 0  # HTTP requests made (retries included)
    failures: list[str] = field(default_factory=list)


def chat_key(model: Any, body: dict[str, Any], image: bytes | None) -> str:
    """The store key of `body` (its image by content)."""
    keyed = _without_image(body, content_key("image", image) if image is not None else None)
    return request_key("chat", model=model.fingerprint, body=keyed)


def _without_image(body: dict[str, Any], image_key: str | None) -> dict[str, Any]:
    messages = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, list):
            content = [
                {"type": "image", "content_key": image_key} if p.get("type") == "image_url" else p
                for p in content
            ]
        messages.append({**m, "content": content})
    return {**body, "messages": messages}


def chat_answers(
    model: Any,
    requests: Sequence[tuple[str, bytes | None]],
    store: RequestStore | None,
    *,
    replay_only: bool = False,
    max_requests: int | None = None,
    concurrency: int = 4,
    retries: int = 5,
    backoff: float = 1.0,
) -> tuple[list[str], ChatStats]:
    """The answers to (prompt, image bytes) `requests`, in order."""
    stats = ChatStats()
    bodies = [model.body(p, img) for p, img in requests]
    keys = [chat_key(model, b, img) for b, (_, img) in zip(bodies, requests, strict=True)]
    unique = list(dict.fromkeys(keys))
    stats.n_requests = len(unique)
    found = store.get_records(unique) if store is not None else {}
    answers = {k: v["text"] for k, v in found.items() if isinstance(v, dict) and "text" in v}
    stats.n_stored = len(answers)
    todo = [k for k in unique if k not in answers]
    _guard(todo, replay_only, max_requests, store)
    if todo:
        body_of = dict(zip(keys, bodies, strict=True))
        _send_all(model, todo, body_of, store, answers, stats, concurrency, retries, backoff)
    if stats.failures:
        raise ModelError(
            f"{model.name}: {len(stats.failures)} of {len(todo)} requests failed (first: "
            f"{stats.failures[0]}; rate limits, server errors and time-outs were tried {retries} "
            f"times, other errors once); the {stats.n_sent} answers received are stored: run the "
            "same command again to send only the rest"
        )
    return [answers[k] for k in keys], stats


def _guard(
    todo: list[str], replay_only: bool, max_requests: int | None, store: RequestStore | None
) -> None:
    if todo and replay_only:
        raise LexsemError(
            f"replay only: {len(todo)} requests have no stored answer in "
            f"{store.path if store is not None else 'the store (disabled)'}"
        )
    if max_requests is not None and len(todo) > max_requests:
        raise LexsemError(
            f"{len(todo)} requests would be sent, more than --max-requests {max_requests}; "
            "nothing was sent (raise the limit, or select fewer items)"
        )


def _send_all(
    model: Any,
    todo: list[str],
    body_of: dict[str, dict[str, Any]],
    store: RequestStore | None,
    answers: dict[str, str],
    stats: ChatStats,
    concurrency: int,
    retries: int,
    backoff: float,
) -> None:
    import httpx

    lock = threading.Lock()

    def one(key: str) -> None:
        try:
            text, raw = _with_retries(model, client, body_of[key], retries, backoff, stats, lock)
        except (ModelError, _GaveUp) as exc:
            with lock:
                stats.failures.append(str(exc))
            return
        if store is not None:
            store.put_records([key], [{"text": text, "response": raw}])  # stored as it arrives
        with lock:
            answers[key] = text
            stats.n_sent += 1

    with (
        httpx.Client() as client,
        ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool,
    ):
        list(pool.map(one, todo))


class _GaveUp(Exception):
    pass


def _with_retries(
    model: Any, client: Any, body: dict[str, Any], retries: int, backoff: float,
    stats: ChatStats, lock: threading.Lock,
) -> tuple[str, dict[str, Any]]:  # fmt: skip
    last = "no attempt"
    for attempt in range(max(1, retries)):
        if attempt:
            time.sleep(min(30.0, backoff * 2 ** (attempt - 1)))
        with lock:
            stats.n_attempts += 1
        try:
            return model.send(client, body)
        except RetryableError as exc:
            last = str(exc)
    raise _GaveUp(last)

"""Ask a chat model prompts about images, through the request store: every answer is stored as
it arrives, a rerun sends nothing already answered, and failed requests are never stored.

A request's key is `chat_request_key(<fingerprint>, <the request body with each image replaced
by its content key>)` (`lexsem.engine.keys`): the images' bytes (never their paths), the rendered
messages (every turn: k-shot demonstrations are part of the key), the model and every
generation parameter (log-probability settings included). The stored record holds the answer's
text and the raw response JSON (`{"imported_from": ...}` for answers imported from a file,
`lexsem.engine.chat_import`).

Sending: at most `concurrency` requests at a time — or, for a model with `send_batch` (a local
model generating several prompts in one batch: `chat:`), `batch_size` requests per call, one
call at a time, each batch stored as it is answered; a `RetryableError` (HTTP 429, 5xx,
time-out, dropped connection, an answer that is not a chat completion) is retried up to
`retries` times with exponential backoff (`backoff`, 2x`backoff`, ...); a request still failing
is reported, not stored, and the next run sends it again. A `StopRun` error (the server returns
no log-probabilities) stops the run: nothing more is sent. So does a `ConnectionFailed` (the
connection refused, no such host) before any request of the run was answered: a wrong
`base_url` or a server that is not running is one error at once, not minutes of retries; after
a first answer it is retried like any `RetryableError` (a server restarting).

With `progress`, a bar (terminal) or a line every few seconds (piped) counts the requests
answered, failed, waiting to be retried and retried so far (`ChatStats.n_retried`), also while
nothing finishes, under `label` (`asking`, or the build stage asking); Ctrl-C stops sending
(requests in flight are abandoned) and says how many answers the store holds.

`replay_only` refuses to send anything (a miss is an error naming how many are missing);
`max_requests` refuses, before anything is sent, a run that would send more.

Bodies are built twice: keyed (images as content keys, cheap) for every request, and with the
images as base64 data URLs only when one is sent, so a large benchmark's images are not held
in memory as base64 text.

Every chat model goes through here (`lexsem.models.protocols.ChatModel`: an API, a local
`vlm:`, recorded answers, a user's provider). A model answering from a record (`by_item`) is
given no store: it has nothing to save. An answer `None` (a record without one) is never
stored; its item is left out of the run.

`answer_probabilities`: P(answer) to a question about each (image, text) pair, from the
model's log-probabilities (VQAScore through a `LogprobChatModel`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from lexsem.credentials import redact
from lexsem.engine.keys import chat_request_key, content_key
from lexsem.engine.progress_bar import Progress
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ConnectionFailed, LexsemError, ModelError, RetryableError
from lexsem.models.chat import AnswerProb, ChatRequest, StopRun

__all__ = [
    "ChatStats",
    "ImageKeys",
    "answer_probabilities",
    "chat_answers",
    "chat_key",
    "chat_records",
    "failed_message",
    "is_imported",
    "send_requests",
]


@dataclass
class ChatStats:
    n_requests: int = 0  # distinct requests asked for
    n_stored: int = 0  # served by the store
    n_imported: int = 0  # of those, answers imported from a file
    n_sent: int = 0  # answered now
    n_attempts: int = 0  # HTTP requests made (retries included)
    n_retried: int = 0  # attempts after a request's first (a retry after a retryable error)
    failures: list[str] = field(default_factory=list)
    stopped: bool = False  # a StopRun error stopped the run


class ImageKeys:
    """An image's content part in a store key: its content key (memoised per bytes object)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[bytes, str]] = {}

    def __call__(self, image: bytes) -> dict[str, Any]:
        hit = self._memo.get(id(image))
        if hit is None or hit[0] is not image:
            hit = (image, content_key("image", image))
            self._memo[id(image)] = hit
        return {"type": "image", "content_key": hit[1]}


def chat_key(model: Any, request: ChatRequest, image_keys: Any = None) -> str:
    """The store key of `request` (its images by content)."""
    body = model.request_body(request, image_keys or ImageKeys())
    return chat_request_key(model.fingerprint, body)


def is_imported(record: Any) -> bool:
    """Whether a stored record is an answer imported from a file."""
    response = record.get("response") if isinstance(record, dict) else None
    return isinstance(response, dict) and "imported_from" in response


def chat_answers(
    model: Any,
    requests: Sequence[tuple[str, bytes | None] | ChatRequest],
    store: RequestStore | None,
    **send: Any,
) -> tuple[list[str], ChatStats]:
    """The answers to `requests` ((prompt, image bytes) or conversations), in order; `send`:
    options of `chat_records`."""
    asked = [r if isinstance(r, ChatRequest) else ChatRequest.ask(*r) for r in requests]
    records, stats = chat_records(model, asked, store, **send)
    return [r["text"] for r in records], stats


def chat_records(
    model: Any,
    requests: Sequence[ChatRequest],
    store: RequestStore | None,
    *,
    replay_only: bool = False,
    max_requests: int | None = None,
    concurrency: int = 4,
    retries: int = 5,
    backoff: float = 1.0,
    progress: bool = False,
    label: str = "asking",
) -> tuple[list[dict[str, Any]], ChatStats]:
    """The stored records (`{"text", "response"}`) of `requests`, in order, sending the
    missing ones (with `progress`, shown under `label` as they are answered)."""
    stats = ChatStats()
    image_keys = ImageKeys()
    keys = [chat_key(model, r, image_keys) for r in requests]
    unique = list(dict.fromkeys(keys))
    stats.n_requests = len(unique)
    found = store.get_records(unique) if store is not None else {}
    records = {k: v for k, v in found.items() if isinstance(v, dict) and "text" in v}
    stats.n_stored = len(records)
    stats.n_imported = sum(is_imported(v) for v in records.values())
    todo = [k for k in unique if k not in records]
    _guard(todo, replay_only, max_requests, store)
    if todo:
        request_of = dict(zip(keys, requests, strict=True))
        sending = _Sending(concurrency, retries, backoff, progress, label)
        if callable(getattr(model, "send_batch", None)):
            _send_batches(_Todo(model, todo, request_of, store, records, stats), sending)
        else:
            _send_all(_Todo(model, todo, request_of, store, records, stats), sending)
    if stats.failures:
        raise ModelError(failed_message(model, stats, len(todo), retries))
    return [records[k] for k in keys], stats


def failed_message(
    model: Any,
    stats: ChatStats,
    n_todo: int,
    retries: int,
    requests: str = "requests",
    received: str = "answers",
) -> str:
    """The message of a run whose `requests` failed (`received`: what the stored replies are),
    without URL credentials (an HTTP library's error names the URL it was sent to)."""
    if stats.stopped:
        text = (
            f"{model.name}: {stats.failures[0]}; nothing more was sent (the {stats.n_sent} "
            f"{received} received are stored)"
        )
    else:
        text = (
            f"{model.name}: {len(stats.failures)} of {n_todo} {requests} failed (first: "
            f"{stats.failures[0]}; rate limits, server errors and time-outs were tried "
            f"{retries} times, other errors once); the {stats.n_sent} {received} received are "
            "stored: run the same command again to send only the rest"
        )
    return redact(text)


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


@dataclass
class _Sending:
    """How `_send_all` sends: parallel requests, attempts, backoff, and whether to show it."""

    concurrency: int = 4
    retries: int = 5
    backoff: float = 1.0
    progress: bool = False
    label: str = "asking"
    answered: int = 0
    failed: int = 0
    retrying: int = 0  # requests waiting out a backoff before their next attempt
    retried: int = 0  # attempts after a first, so far
    stop: threading.Event = field(default_factory=threading.Event)

    def detail(self) -> str:
        return (
            f"{self.answered:,} answered, {self.failed:,} failed, {self.retrying:,} retrying, "
            f"{self.retried:,} retried"
        )


@dataclass(frozen=True)
class _Todo:
    """What is to be sent and where it goes: `model`, the `keys` to send (`request_of[key]`
    each), the `store` each answer is written to as it arrives, the `records` and `stats` it
    fills."""

    model: Any
    keys: list[str]
    request_of: Mapping[str, Any]
    store: Any
    records: dict[str, dict[str, Any]]
    stats: ChatStats


def _send_all(job: _Todo, sending: _Sending) -> None:
    import httpx

    model, todo, request_of = job.model, job.keys, job.request_of
    store, records, stats = job.store, job.records, job.stats

    lock = threading.Lock()
    stop = sending.stop

    def one(key: str) -> None:
        if stop.is_set():
            return
        body = model.request_body(request_of[key])  # images as data URLs, only now
        try:
            text, raw = _with_retries(lambda: model.send(client, body), sending, stats, lock)
        except (ModelError, _GaveUp) as exc:
            with lock:
                if isinstance(exc, StopRun) and not stats.stopped:
                    stats.stopped = True
                    stats.failures.insert(0, str(exc))
                    stop.set()
                elif not isinstance(exc, StopRun) and not stop.is_set():
                    stats.failures.append(str(exc))
                    sending.failed += 1
            return
        record = {"text": text, "response": raw}
        if store is not None and text is not None:
            store.put_records([key], [record])  # stored as it arrives
        with lock:
            records[key] = record
            stats.n_sent += 1
            sending.answered += 1

    bar = Progress(sending.label, len(todo), unit="requests", enabled=sending.progress,
                   store=store)  # fmt: skip
    pool = ThreadPoolExecutor(max_workers=max(1, sending.concurrency))
    with httpx.Client() as client:
        try:
            with bar:
                pending = {pool.submit(one, key) for key in todo}
                while pending:
                    done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                    with lock:
                        bar.detail = sending.detail()
                        finished, saved = sending.answered + sending.failed, sending.answered
                    bar.saved(saved - bar.saved_n)
                    if finished > bar.done:
                        bar.advance(finished - bar.done)
                    else:
                        bar.tick()
                    for future in done:
                        future.result()  # a bug in a model's code is raised, not hidden
        except BaseException:  # Ctrl-C, or an error: send nothing more, wait for nothing
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def send_requests(
    model: Any,
    keys: Sequence[str],
    request_of: dict[str, Any],
    store: Any,
    *,
    concurrency: int = 4,
    retries: int = 5,
    backoff: float = 1.0,
    progress: bool = False,
) -> tuple[dict[str, dict[str, Any]], ChatStats]:
    """Send the request `request_of[key]` of each of `keys` the way `chat_records` sends its
    missing ones (concurrency, retries with backoff, a dead server stops the run, each answer
    stored as it arrives with `store.put_records`), for requests of other kinds whose model has
    `request_body(request)` and `send(client, body) -> (text, raw)` (image generation:
    `lexsem.engine.image_gen`). Returns the records received and the statistics (failures
    listed, not raised)."""
    stats = ChatStats(n_requests=len(keys))
    records: dict[str, dict[str, Any]] = {}
    if keys:
        sending = _Sending(concurrency, retries, backoff, progress)
        _send_all(_Todo(model, list(keys), request_of, store, records, stats), sending)
    return records, stats


class _GaveUp(Exception):
    pass


def _send_batches(job: _Todo, sending: _Sending) -> None:
    """Send `todo` to a model that answers a batch per call (`send_batch(client, bodies)`,
    `batch_size` bodies at a time), one call at a time; each batch's answers are stored as it
    returns, so a killed run keeps every finished batch. A batch that fails fails each of its
    requests (none is stored); `StopRun` stops the run."""
    import httpx

    model, todo, request_of = job.model, job.keys, job.request_of
    store, records, stats = job.store, job.records, job.stats

    size = max(1, int(getattr(model, "batch_size", 1) or 1))
    lock = threading.Lock()  # one thread: kept for `_with_retries`
    bar = Progress(sending.label, len(todo), unit="requests", enabled=sending.progress,
                   store=store)  # fmt: skip
    with httpx.Client() as client, bar:
        for start in range(0, len(todo), size):
            keys = todo[start : start + size]
            bodies = [model.request_body(request_of[k]) for k in keys]
            try:
                answers = _with_retries(
                    lambda b=bodies: model.send_batch(client, b), sending, stats, lock,
                    weight=len(keys),
                )  # fmt: skip
            except StopRun as exc:
                stats.stopped = True
                stats.failures.insert(0, str(exc))
                break
            except (ModelError, _GaveUp) as exc:
                stats.failures += [str(exc)] * len(keys)
                sending.failed += len(keys)
                bar.detail = sending.detail()
                bar.advance(len(keys))
                continue
            if len(answers) != len(keys):
                raise ModelError(
                    f"{model.name}: send_batch answered {len(answers)} of {len(keys)} requests"
                )
            pairs = zip(keys, answers, strict=True)
            new = [(k, {"text": t, "response": raw}) for k, (t, raw) in pairs]
            kept = [(k, r) for k, r in new if r["text"] is not None]
            if store is not None and kept:
                store.put_records([k for k, _ in kept], [r for _, r in kept])
            records.update(new)
            stats.n_sent += len(keys)
            sending.answered += len(keys)
            bar.saved(len(kept))
            bar.detail = sending.detail()
            bar.advance(len(keys))


def _with_retries(
    call: Callable[[], Any], sending: _Sending, stats: ChatStats, lock: threading.Lock, *,
    weight: int = 1,
) -> Any:  # fmt: skip
    """`call()` (one request, or a batch of `weight` requests), retried as the module says."""
    last = "no attempt"
    for attempt in range(max(1, sending.retries)):
        if attempt:
            with lock:
                sending.retrying += weight
                sending.retried += weight
                stats.n_retried += weight
            stopped = sending.stop.wait(min(30.0, sending.backoff * 2 ** (attempt - 1)))
            with lock:
                sending.retrying -= weight
            if stopped:
                raise _GaveUp(last)
        with lock:
            stats.n_attempts += weight
        try:
            return call()
        except ConnectionFailed as exc:
            with lock:
                first = stats.n_sent == 0
            if first:
                raise StopRun(
                    f"{exc}: no request of this run has been answered, so lexsem stops "
                    "rather than retry (check base_url and that the server is running)"
                ) from None
            last = str(exc)
        except RetryableError as exc:
            last = str(exc)
    raise _GaveUp(last)


def answer_probabilities(
    model: Any,
    pairs: Sequence[tuple[bytes | None, str]],
    store: RequestStore | None,
    *,
    question: str,
    answers: Sequence[str] = ("Yes", "No"),
    **send: Any,
) -> tuple[list[dict[str, AnswerProb]], ChatStats]:
    """P(answer) for each of `answers` to `question` (a template with `{text}`) about each
    (image bytes, text) pair, in order, through the store; `send`: options of
    `chat_records`."""
    per_pair = [model.logprob_requests(img, question.format(text=t), answers) for img, t in pairs]
    flat = [r for reqs in per_pair for r in reqs]
    records, stats = chat_records(model, flat, store, **send)
    out, at = [], 0
    for reqs in per_pair:
        raws = [rec["response"] for rec in records[at : at + len(reqs)]]
        out.append(model.answer_probs(raws, answers))
        at += len(reqs)
    return out, stats


def asked_answers(model: Any, answer: str, negative: str, score: str) -> tuple[str, ...]:
    """The answers whose probabilities VQAScore `score` needs from `model`: P(negative) too
    when the score uses it, or when it comes with P(answer) in the same request."""
    both = (answer, negative)
    if score not in ("vqa", "p_yes") or len(model.logprob_requests(None, "?", both)) == 1:
        return both
    return (answer,)

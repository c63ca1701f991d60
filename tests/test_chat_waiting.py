"""Asking a chat server that is not there, slow or failing: a refused connection before any
answer stops the run at once with one error naming the server (never its credentials); while
requests are retried a progress line counts what was answered, failed and is being retried;
Ctrl-C while asking says how many answers the store kept."""

from __future__ import annotations

import io
import re
import socket
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.chat_server import Server
from lexsem.cli import app
from lexsem.engine import progress_bar as progress
from lexsem.engine.chat import chat_records
from lexsem.engine.conversations import answer_requests, image_reader
from lexsem.engine.plan import Work
from lexsem.engine.progress_bar import Interrupted
from lexsem.engine.request_store import RequestStore
from lexsem.errors import ModelError
from lexsem.images.image_store import ImageStore
from lexsem.models.backends.openai_chat import OpenAIChat
from lexsem.models.protocols import fingerprint_key
from lexsem.tasks.catalog import get_task


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _records(url: str, bench: dict[str, Any], **send: Any) -> tuple[list[Any], Any, Any]:
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}&timeout=2")
    work = Work("fixture_pp", bench["items"], [get_task("choice_scpp3")])
    asked = answer_requests([work], image_reader(ImageStore(coco_val2017=bench["images"])))
    store = RequestStore(bench["cache"], fingerprint_key(chat.fingerprint))
    with store:
        records, stats = chat_records(chat, asked.requests, store, **send)
    return records, stats, store


def test_a_closed_port_is_one_error_at_once_naming_the_server_without_credentials(
    closed_port: int, bench: dict[str, Any]
) -> None:
    url = f"http://someone:s3cret-pass@127.0.0.1:{closed_port}/v1"
    t0 = time.monotonic()
    res = CliRunner().invoke(
        app,
        ["ask", "-m", f"openai:tiny-vlm?base_url={url}", "-b", "fixture_pp",
         "--prompt", "scpp3", "--data-dir", str(bench["data"]),
         "--coco-val2017", str(bench["images"]), "--cache-dir", str(bench["cache"]),
         "-o", str(bench["cache"].parent / "answers.jsonl")],
    )  # fmt: skip
    elapsed = time.monotonic() - t0
    assert res.exit_code == 2, res.output
    assert elapsed < 10, elapsed  # 5 retries with backoff 1 s for each of 15 requests: minutes
    assert "asking: 0 / 15 requests (0%)" in res.output  # ask shows its progress
    errors = [line for line in res.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, res.output
    assert f"cannot connect to http://***@127.0.0.1:{closed_port}/v1" in errors[0]
    assert "no request of this run has been answered" in errors[0]
    assert "s3cret" not in res.output and "someone" not in res.output


def test_a_refused_connection_after_answers_is_retried_not_a_stop(
    server: tuple[Server, str], bench: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop rule holds before the first answer only: a server that restarts mid-run is
    retried like any other fault."""
    from lexsem.errors import ConnectionFailed

    _, url = server
    real = OpenAIChat.send
    calls = {"n": 0}

    def flaky(self: OpenAIChat, client: Any, body: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise ConnectionFailed("cannot connect to the test server")
        return real(self, client, body)

    monkeypatch.setattr(OpenAIChat, "send", flaky)
    records, stats, _ = _records(url, bench, concurrency=1, backoff=0.01)
    assert stats.n_sent == len(records) == 15 and not stats.stopped
    assert stats.n_attempts == 16


def test_waiting_shows_answered_failed_and_retrying(
    server: tuple[Server, str], bench: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = server
    state.faults = ["500"] * 3
    state.fail = "never-in-a-prompt"
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    monkeypatch.setattr(progress, "is_tty", lambda stream: False)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    _records(url, bench, concurrency=1, backoff=0.3, progress=True)
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("asking: 0 / 15 requests (0%)")
    shapes = [re.search(r"(\d+) answered, (\d+) failed, (\d+) retrying", line) for line in lines]
    counts = [tuple(map(int, m.groups())) for m in shapes if m]
    assert (0, 0, 1) in counts  # the first request waits out its backoff: a line says so
    assert counts[-1] == (15, 0, 0)
    assert lines[-1].startswith("asking: 15 / 15 requests (100%), 15 answered")


def test_ctrl_c_while_asking_says_how_many_answers_were_kept(
    server: tuple[Server, str], bench: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C reaches the main thread while it waits: after the 4th answer here; the 5th
    request is still in flight (slow) and is abandoned."""
    import lexsem.engine.chat as chat_engine

    state, url = server
    real_send, real_wait = OpenAIChat.send, chat_engine.wait

    def slow_after_four(self: OpenAIChat, client: Any, body: dict[str, Any]) -> Any:
        if len(state.answered) >= 4:
            time.sleep(1.0)
        return real_send(self, client, body)

    def ctrl_c_after_four(*args: Any, **kwargs: Any) -> Any:
        if len(state.answered) >= 4:
            raise KeyboardInterrupt
        return real_wait(*args, **kwargs)

    monkeypatch.setattr(OpenAIChat, "send", slow_after_four)
    monkeypatch.setattr(chat_engine, "wait", ctrl_c_after_four)
    t0 = time.monotonic()
    with pytest.raises(Interrupted) as exc:
        _records(url, bench, concurrency=1, progress=True)
    assert time.monotonic() - t0 < 5  # the remaining 11 requests are not waited for
    assert "interrupted while asking: 4 of 15 requests" in exc.value.message()
    time.sleep(1.5)  # the abandoned request ends (its client is closed: nothing is stored)
    monkeypatch.setattr(OpenAIChat, "send", real_send)
    monkeypatch.setattr(chat_engine, "wait", real_wait)
    _, stats, _ = _records(url, bench)
    assert stats.n_stored == 4 and stats.n_sent == 11  # the rerun asks only the rest


def test_a_failing_server_still_ends_with_the_count_of_failures(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    state.fail_all = True
    with pytest.raises(ModelError, match=r"15 of 15 requests failed"):
        _records(url, bench, backoff=0.0, retries=2)

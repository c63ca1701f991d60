"""The OpenAI-compatible chat backend and the request store, end to end against a fake server on
127.0.0.1 started here: rate limits, server errors, time-outs, broken JSON and dropped
connections are retried; every answer is stored as it arrives and never asked twice; failed
requests are not stored; replay-only and the request cap refuse before sending anything."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from fakes import TRIPLETS, register_fixture_benchmark
from lexsem.benchmarks.load import load_benchmark
from lexsem.cli import app
from lexsem.engine.store import RequestStore
from lexsem.errors import LexsemError, ModelError
from lexsem.images.store import ImageStore
from lexsem.models.backends.openai_chat import OpenAIChat
from lexsem.models.protocols import fingerprint_key
from lexsem.tasks.choice import score_choices
from lexsem.tasks.choice_run import ask_choices

NEGATIVES = {n for rows in TRIPLETS.values() for _, _, n in rows}
KEY = "sk-test-never-written-0123456789"


class Server:
    """Answers like an oracle (names the option that is a known negative); `faults` are applied
    to the next requests in order: "429", "500", "json" (not JSON), "drop" (connection closed
    without an answer), "slow" (answers after the client's time-out); `fail` is a prompt
    substring answered 500 always."""

    def __init__(self) -> None:
        self.faults: list[str] = []
        self.fail: str | None = None
        self.answered: list[tuple[str, str]] = []  # (prompt, image url prefix) answered 200
        self.posts = 0
        self.auth: set[str] = set()
        self.lock = threading.Lock()

    def reply(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        with self.lock:
            self.posts += 1
            self.auth.add(handler.headers.get("Authorization", ""))
            fault = self.faults.pop(0) if self.faults else None
        parts = body["messages"][0]["content"]
        prompt = next(p["text"] for p in parts if p["type"] == "text")
        image = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        if body["model"] == "no-such-model":
            return _send(handler, 404, b'{"error": "model not found"}')
        if fault == "drop":
            handler.close_connection = True
            handler.connection.close()
            return
        if fault == "slow":  # the client has given up by then: not an answer it received
            time.sleep(1.5)
            return _send(handler, 200, b'{"choices": [{"message": {"content": "(1)"}}]}')
        if fault in ("429", "500") or (self.fail and self.fail in prompt):
            return _send(handler, int(fault or 500), b'{"error": "busy"}')
        if fault == "json":
            return _send(handler, 200, b"<html>gateway</html>")
        options = dict(re.findall(r"\((\d)\)\s*([^;\n]+?)(?:;|\n|$)", prompt))
        pick = next((k for k, text in options.items() if text.strip() in NEGATIVES), "1")
        with self.lock:
            self.answered.append((prompt, image[:60]))
        answer = {"choices": [{"message": {"role": "assistant", "content": f"({pick})"}}]}
        _send(handler, 200, json.dumps(answer).encode())


def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def server() -> Iterator[tuple[Server, str]]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            state.reply(self)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    images = tmp_path / "val2017"
    images.mkdir()
    rng = np.random.default_rng(3)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (20, 30, 3), dtype=np.uint8)).save(images / f"{i}.png")
        (images / f"{i}.jpg").write_bytes((images / f"{i}.png").read_bytes())
    loaded = load_benchmark("fixture_pp", data_dir=data)
    return {"data": data, "images": images, "items": loaded.items, "cache": tmp_path / "cache"}


def _ask(url: str, bench: dict[str, Any], **kw: Any) -> tuple[list[Any], Any]:
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}&timeout=1")
    store = RequestStore(bench["cache"], fingerprint_key(chat.fingerprint))
    with store:
        return ask_choices(
            chat, bench["items"], ImageStore(coco_val2017=bench["images"]), "scpp3", store,
            backoff=0.01, **kw,
        )  # fmt: skip


def test_faults_are_retried_and_every_answer_is_asked_once(
    server: tuple[Server, str], bench: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = server
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    state.faults = ["429", "500", "json", "drop", "slow"]
    answers, stats = _ask(url, bench, concurrency=2)
    n = len(bench["items"]) * 3
    assert len(answers) == n and stats.n_sent == n and stats.n_stored == 0
    assert stats.n_attempts == n + 5  # each fault cost one more attempt
    assert len(state.answered) == n == len(set(state.answered))  # nothing answered twice
    items = {f"{it.subset}/{it.id}": it for it in bench["items"]}
    scores = score_choices(answers, items)
    assert set(scores.accuracy.values()) == {100.0}  # the oracle's answers, in every ordering
    assert state.auth == {f"Bearer {KEY}"}
    stored = b"".join(p.read_bytes() for p in bench["cache"].rglob("*") if p.is_file())
    assert KEY.encode() not in stored  # the key is never written
    # a rerun sends nothing
    posts = state.posts
    again, stats2 = _ask(url, bench)
    assert state.posts == posts and stats2.n_stored == n and stats2.n_sent == 0
    assert [a.text for a in again] == [a.text for a in answers]


def test_failed_requests_are_not_stored_and_a_rerun_sends_only_them(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    victim = TRIPLETS["swap_obj"][1][2]  # one item's negative: its prompts always fail
    state.fail = victim
    with pytest.raises(ModelError, match=r"3 of 15 requests failed .* tried 5 times"):
        _ask(url, bench)
    assert len(state.answered) == 12
    state.fail = None
    state.answered.clear()
    _, stats = _ask(url, bench)
    assert stats.n_stored == 12 and stats.n_sent == 3
    assert all(victim in prompt for prompt, _ in state.answered)


def test_replay_only_and_the_request_cap_refuse_before_sending(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    with pytest.raises(LexsemError, match=r"replay only: 15 requests have no stored answer"):
        _ask(url, bench, replay_only=True)
    with pytest.raises(
        LexsemError, match=r"15 requests would be sent, more than --max-requests 10"
    ):
        _ask(url, bench, max_requests=10)
    assert state.posts == 0
    _ask(url, bench, max_requests=15)
    _, stats = _ask(url, bench, replay_only=True)
    assert stats.n_sent == 0 and stats.n_stored == 15


def test_ask_from_the_cli_writes_answers_that_score_answers_reads(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    _, url = server
    out = tmp_path / "answers.jsonl"
    common = ["-b", "fixture_pp", "--prompt", "scpp_order", "--data-dir", str(bench["data"]),
              "--coco-val2017", str(bench["images"]),
              "--cache-dir", str(bench["cache"])]  # fmt: skip
    res = CliRunner().invoke(app, ["ask", "-m", f"openai:tiny-vlm?base_url={url}", *common,
                                   "-o", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "| scpp_order | NPP | 5 | 100.00 |" in res.stdout
    assert "15 requests: 0 answered from the store, 15 sent" in res.stderr
    rescored = CliRunner().invoke(app, ["score-answers", str(out), *common[:6]])
    assert rescored.exit_code == 0, rescored.output
    assert "| scpp_order | PPN | 5 | 100.00 |" in rescored.stdout
    bad = CliRunner().invoke(app, ["ask", "-m", f"openai:tiny-vlm?base_ur={url}", *common])
    assert (
        bad.exit_code == 2 and "unknown option 'base_ur' (did you mean 'base_url'?)" in bad.output
    )


def test_a_client_error_is_not_retried_and_names_the_server(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    """A wrong model name (HTTP 404) fails at once: retrying cannot fix it."""
    state, url = server
    chat = OpenAIChat(f"openai:no-such-model?base_url={url}")
    with RequestStore(bench["cache"], fingerprint_key(chat.fingerprint)) as store:
        with pytest.raises(ModelError, match=r"HTTP 404 from http://127\.0\.0\.1:\d+/v1"):
            ask_choices(
                chat, bench["items"][:1], ImageStore(coco_val2017=bench["images"]), "scpp3",
                store, backoff=0.01, concurrency=1,
            )  # fmt: skip
        assert store.count("records") == 0
    assert state.posts == 3  # one per ordering, none retried

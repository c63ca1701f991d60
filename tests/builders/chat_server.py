"""A fake OpenAI-compatible chat server on localhost, and a small benchmark to ask it about."""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders.fakes import TRIPLETS, register_fixture_benchmark
from builders.local_http import send_json, serve_posts
from lexsem.benchmarks.load import load_benchmark

NEGATIVES = {n for rows in TRIPLETS.values() for _, _, n in rows}


class Server:
    """Answers like an oracle (names the option that is a known negative) about the last user
    turn; `faults` are applied to the next requests in order: "429", "500", "json" (not JSON),
    "drop" (connection closed without an answer), "slow" (answers after the client's
    time-out); `fail` is a prompt substring answered 500 always; `fail_all` answers every
    request 500. A request without an image (a build's generator) is answered with its prompt
    in upper case. With `hold_after` = k, the requests after the k-th to arrive are held (not
    answered) until `release` is set. Log-probabilities (`tests/test_chat_logprobs.py`):
    OpenAI's top log-probs of the first token, or vLLM's prompt log-probs of a continued final
    assistant message, from `P_YES` (unless `no_logprobs`)."""

    def __init__(self) -> None:
        self.faults: list[str] = []
        self.fail: str | None = None
        self.fail_all = False
        self.no_logprobs = False
        self.answered: list[tuple[str, str]] = []  # (prompt, image url prefix) answered 200
        self.bodies: list[dict[str, Any]] = []  # every body received
        self.posts = 0
        self.auth: set[str] = set()
        self.lock = threading.Lock()
        self.hold_after: int | None = None  # answer this many, then hold every other request
        self.release = threading.Event()  # ends a hold: the held requests get no answer

    def reply(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        with self.lock:
            self.posts += 1
            arrived = self.posts
            self.bodies.append(body)
            self.auth.add(handler.headers.get("Authorization", ""))
            fault = self.faults.pop(0) if self.faults else None
        parts = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        if isinstance(parts, str):  # a text-only turn
            parts = [{"type": "text", "text": parts}]
        prompt = next(p["text"] for p in parts if p["type"] == "text")
        image = next((p["image_url"]["url"] for p in parts if p["type"] == "image_url"), "")
        if self.hold_after is not None and arrived > self.hold_after:
            # held: a client killed meanwhile gets nothing; the connection is closed
            self.release.wait(60)
            handler.close_connection = True
            return
        if body["model"] == "no-such-model":
            return send_json(handler, 404, b'{"error": "model not found"}')
        if fault == "drop":
            handler.close_connection = True
            handler.connection.close()
            return
        if fault == "slow":  # the client has given up by then: not an answer it received
            time.sleep(1.5)
            return send_json(handler, 200, b'{"choices": [{"message": {"content": "(1)"}}]}')
        if self.fail_all or fault in ("429", "500") or (self.fail and self.fail in prompt):
            return send_json(handler, int(fault or 500), b'{"error": "busy"}')
        if fault == "json":
            return send_json(handler, 200, b"<html>gateway</html>")
        with self.lock:
            self.answered.append((prompt, image[:60]))
        if body.get("logprobs") or "prompt_logprobs" in body:
            return send_json(handler, 200, json.dumps(self.logprobs(body, prompt)).encode())
        if not image:  # a text-only request (a build's generator): the prompt in upper case
            answer = {"choices": [{"message": {"role": "assistant", "content": prompt.upper()}}]}
            return send_json(handler, 200, json.dumps(answer).encode())
        options = dict(re.findall(r"\((\d)\)\s*([^;\n]+?)(?:;|\n|$)", prompt))
        pick = next((k for k, text in options.items() if text.strip() in NEGATIVES), "1")
        answer = {"choices": [{"message": {"role": "assistant", "content": f"({pick})"}}]}
        send_json(handler, 200, json.dumps(answer).encode())

    def logprobs(self, body: dict[str, Any], question: str) -> dict[str, Any]:
        caption = re.search(r'"(.*)"', question).group(1)  # type: ignore[union-attr]
        choice: dict[str, Any] = {"message": {"role": "assistant", "content": "Yes"}}
        out: dict[str, Any] = {"choices": [choice]}
        if self.no_logprobs:
            return out
        if body.get("logprobs"):
            top = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                   for t, p in top_tokens(caption)]  # fmt: skip
            choice["logprobs"] = {"content": [{**top[0], "top_logprobs": top}]}
            return out
        answer = body["messages"][-1]["content"]
        # the prompt's log-probabilities have every token: ODD's "No" is unlikely, not absent
        out["prompt_logprobs"] = prompt_logprobs(answer, max(0.01, p_answer(caption, answer)))
        return out


# P("Yes") of a caption: positives 0.8 (0.7 "Yes" + 0.1 " yes"), negatives 0.2; "No" the rest
# (less 0.05 "Maybe"); ODD is a caption whose top-k has no "No" at all
ODD = TRIPLETS["replace_att"][0][0]


def top_tokens(caption: str) -> list[tuple[str, float]]:
    if caption == ODD:
        return [("Yes", 0.9), ("Sure", 0.1)]
    if caption in NEGATIVES:
        return [("No", 0.7), ("Yes", 0.2), (" no", 0.05), ("Maybe", 0.05)]
    return [("Yes", 0.7), ("No", 0.15), (" yes", 0.1), ("Maybe", 0.05)]


def p_answer(caption: str, answer: str) -> float:
    want = answer.strip().casefold()
    return sum(p for t, p in top_tokens(caption) if t.strip().casefold() == want)


def prompt_logprobs(answer: str, p: float) -> list[Any]:
    """vLLM's prompt_logprobs: null, then 80 template and image tokens, then the answer in
    two-character tokens; the answer's first token is not the top-1 (a second entry, more
    likely), and carries all of log p (the others 0), so exp(mean) = p ** (1 / n)."""
    chunks = [answer[i : i + 2] for i in range(0, len(answer), 2)]
    out: list[Any] = [None]
    out += [{str(i): {"logprob": -0.5, "rank": 1, "decoded_token": f"<t{i}>"}} for i in range(80)]
    for n, chunk in enumerate(chunks):
        lp = math.log(p) if n == 0 else 0.0
        entry = {str(1000 + n): {"logprob": lp, "rank": 2, "decoded_token": chunk}}
        if n == 0:
            entry = {"7": {"logprob": -0.01, "rank": 1, "decoded_token": "Maybe"}, **entry}
        out.append(entry)
    return out


@contextlib.contextmanager
def serve() -> Iterator[tuple[Server, str]]:
    """A fake OpenAI-compatible server on 127.0.0.1: (its state, its base URL)."""
    state = Server()
    with serve_posts(state.reply) as url:
        yield state, url


def make_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The fixture benchmark (TRIPLETS) with an image per item id, and a cache folder."""
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    images = tmp_path / "val2017"
    images.mkdir()
    rng = np.random.default_rng(3)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (20, 30, 3), dtype=np.uint8)).save(images / f"{i}.png")
        (images / f"{i}.jpg").write_bytes((images / f"{i}.png").read_bytes())
    loaded = load_benchmark("fixture_pp", data_dir=data)
    return {"data": data, "images": images, "items": loaded.items, "cache": tmp_path / "cache"}

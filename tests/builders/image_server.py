"""A fake OpenAI-compatible image server on localhost (``/images/generations``, base64 PNG)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from PIL import Image

from builders.local_http import send_json, serve_posts


def prompt_png(prompt: str, size: int = 12) -> bytes:
    """The image the server answers for `prompt`: one colour drawn from its sha256."""
    r, g, b = hashlib.sha256(prompt.encode()).digest()[:3]
    buf = io.BytesIO()
    Image.new("RGB", (size, size), (r, g, b)).save(buf, format="PNG")
    return buf.getvalue()


class ImageServer:
    """Answers every request with `prompt_png(prompt)`; `faults` apply to the next requests in
    order: "500", "429", "400", "json" (not JSON), "drop" (connection closed); `fail` is a
    prompt substring answered 400 always."""

    def __init__(self) -> None:
        self.faults: list[str] = []
        self.fail: str | None = None
        self.bodies: list[dict[str, Any]] = []  # every body received
        self.answered: list[str] = []  # prompts answered 200
        self.auth: set[str] = set()
        self.lock = threading.Lock()

    def reply(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        with self.lock:
            self.bodies.append(body)
            self.auth.add(handler.headers.get("Authorization", ""))
            fault = self.faults.pop(0) if self.faults else None
        if not handler.path.endswith("/images/generations"):
            return send_json(handler, 404, b'{"error": "no such endpoint"}')
        if fault == "drop":
            handler.close_connection = True
            handler.connection.close()
            return
        if fault in ("500", "429") or (
            fault == "400" or (self.fail and self.fail in body["prompt"])
        ):
            return send_json(handler, int(fault or 400), b'{"error": "refused"}')
        if fault == "json":
            return send_json(handler, 200, b"<html>gateway</html>")
        with self.lock:
            self.answered.append(body["prompt"])
        data = base64.b64encode(prompt_png(body["prompt"])).decode()
        answer = {"created": 0, "data": [{"b64_json": data, "revised_prompt": body["prompt"]}]}
        send_json(handler, 200, json.dumps(answer).encode())


@contextlib.contextmanager
def serve_images() -> Iterator[tuple[ImageServer, str]]:
    """A fake image server on 127.0.0.1: (its state, its base URL)."""
    state = ImageServer()
    with serve_posts(state.reply) as url:
        yield state, url

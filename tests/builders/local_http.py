"""A fake HTTP server on localhost for the fake API servers (`builders.chat_server`,
`builders.image_server`): every POST handed to the state's `reply(handler)`, JSON answers."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the system's choice), for a server a test starts."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def send_json(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    """Answer the request with `status` and the JSON bytes `data`."""
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def serve_posts(reply: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A server on 127.0.0.1 answering every POST by `reply`, quiet, one thread a request:
    its base URL (``http://127.0.0.1:PORT/v1``); shut down on exit."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            reply(self)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()

"""`lexsem.annotate.simulate.KeptAliveClient`, the benchmark's client: a connection the server
closed while idle is opened again before a request is sent, so each request reaches the server
once; a form is posted url-encoded and a redirect is returned, not followed."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from lexsem.annotate.simulate import KeptAliveClient


@contextmanager
def _closing_server(seen: list[bytes], closed: threading.Semaphore) -> Iterator[int]:
    """A server that answers each connection's first request (a kept-alive 303 response, no
    ``Connection: close``) and then closes it (releasing `closed`), as a server closes an idle
    connection; the requests it got go to `seen`. Its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                got = b""
                while b"\r\n\r\n" not in got:
                    got += conn.recv(65536)
                head, _, body = got.partition(b"\r\n\r\n")
                size = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                             if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
                while len(body) < size:
                    body += conn.recv(65536)
                seen.append(head.split(b"\r\n")[0] + b" " + body)
                conn.sendall(b"HTTP/1.1 303 See Other\r\nLocation: /next\r\n"
                             b"Content-Length: 2\r\n\r\nok")  # fmt: skip
            closed.release()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def test_a_connection_closed_by_the_server_is_opened_again_and_nothing_sent_twice() -> None:
    seen: list[bytes] = []
    closed = threading.Semaphore(0)
    with _closing_server(seen, closed) as port, KeptAliveClient(f"http://127.0.0.1:{port}") as c:
        first = c.request("GET", "/a/x")
        assert (first.status_code, first.text, first.headers["location"]) == (303, "ok", "/next")
        assert closed.acquire(timeout=30)  # the server has closed the first connection
        second = c.request("POST", "/a/x/answer", data={"answer": "1", "page": "p q"})
        assert second.status_code == 303
    assert seen == [b"GET /a/x HTTP/1.1 ", b"POST /a/x/answer HTTP/1.1 answer=1&page=p+q"]


def test_only_plain_http_urls_and_no_followed_redirects() -> None:
    with pytest.raises(ValueError, match="http://host:port"):
        KeptAliveClient("https://example.org")
    with KeptAliveClient("http://127.0.0.1:9") as c, pytest.raises(ValueError, match="redirect"):
        c.request("GET", "/", follow_redirects=True)

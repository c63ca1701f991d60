"""`lexsem.web_server`: the study server and `lexsem explore` serve through it: a port in use
is one line before any address is printed, and a connection that never finishes its headers
is closed while other clients are served."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.annotate_studies import make_study, need_annotate_extra
from lexsem.cli import app as cli_app
from lexsem.errors import LexsemError
from lexsem.web_server import listening, serve

need_annotate_extra()


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def test_a_port_in_use_is_one_error_naming_it() -> None:
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        with pytest.raises(LexsemError, match=rf"--port {port}: cannot listen on .*another"):
            listening("127.0.0.1", port)


@contextmanager
def _serving(monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Iterator[tuple[Any, int]]:
    """`_hello` served by `serve` in a thread: (the uvicorn server, its port)."""
    import uvicorn

    servers: list[uvicorn.Server] = []

    class Recorded(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            servers.append(self)

    monkeypatch.setattr(uvicorn, "Server", Recorded)
    sock = listening("127.0.0.1", 0)
    port = sock.getsockname()[1]
    thread = threading.Thread(target=serve, args=(_hello, sock), kwargs=kw)
    thread.start()
    try:
        end = time.monotonic() + 30
        while not (servers and servers[0].started) and time.monotonic() < end:
            time.sleep(0.05)
        assert servers and servers[0].started, "the server did not start"
        yield servers[0], port
    finally:
        if servers:
            servers[0].should_exit = True
        thread.join(30)
        sock.close()


def test_slow_header_connections_are_closed_and_others_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import httpx

    with _serving(monkeypatch, header_timeout=0.5) as (server, port):
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
        assert httpx.get(f"http://127.0.0.1:{port}/").text == "hello"
        slow.settimeout(5.0)
        assert slow.recv(1024) == b""  # closed by the server
        slow.close()
        cfg = server.config
        assert cfg.limit_concurrency is not None and cfg.timeout_keep_alive <= 10


def test_connections_send_each_write_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nagle's algorithm is off on the server's side of every connection: a response's body,
    written after its headers, would otherwise wait for the client's delayed acknowledgement."""
    import httpx

    with _serving(monkeypatch) as (server, port), httpx.Client() as client:
        assert client.get(f"http://127.0.0.1:{port}/").text == "hello"  # kept alive
        conns = list(server.server_state.connections)
        assert len(conns) == 1
        sock = conns[0].transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_annotate_serve_refuses_a_port_in_use_before_printing_its_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = make_study(tmp_path, "-b", "synthetic", "--sample", "2", "-k", "tot")
    served: list[object] = []
    monkeypatch.setattr("lexsem.annotate.http_server.run", lambda *a, **k: served.append(a))
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        res = CliRunner().invoke(cli_app, ["annotate", "serve", str(study.path), "--port",
                                           str(port)])  # fmt: skip
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines == [
        f"error: --port {port}: cannot listen on 127.0.0.1:{port} "
        "(Address already in use); another server holds it: give another --port"
    ]
    assert not served


def test_printed_addresses_and_answered_host_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a browser can open is printed (never 0.0.0.0, an IPv6 address bracketed), and
    the Host check takes those names: every address of the machine (0.0.0.0, ::) adds its
    names and any IP address; a given address or name adds itself only."""
    from lexsem.web_server import HostCheck, host_names, is_wildcard, open_urls

    monkeypatch.setattr(socket, "gethostname", lambda: "Node7")
    monkeypatch.setattr(socket, "getfqdn", lambda name="": "localhost")  # no dotted name
    assert open_urls("127.0.0.1", 8765) == ("http://127.0.0.1:8765/",)
    assert open_urls("::1", 8765) == ("http://[::1]:8765/",)
    assert open_urls("0.0.0.0", 8765) == ("http://127.0.0.1:8765/", "http://node7:8765/")
    assert open_urls("::", 8765) == ("http://[::1]:8765/", "http://node7:8765/")
    assert host_names("0.0.0.0") == ("127.0.0.1", "localhost", "::1", "node7")
    assert host_names("192.0.2.7") == ("127.0.0.1", "localhost", "192.0.2.7")

    def allows(host: str, header: str) -> bool:
        return HostCheck(_hello, host_names(host), any_address=is_wildcard(host)).allows(header)

    assert allows("::1", "[::1]:8765") and allows("::", "[::1]:8765")
    assert allows("0.0.0.0", "198.51.100.3") and allows("0.0.0.0", "Node7:8765")
    assert not allows("127.0.0.1", "198.51.100.3") and not allows("127.0.0.1", "node7")
    assert not allows("192.0.2.7", "192.0.2.8:80") and allows("192.0.2.7", "192.0.2.7:80")
    for header in ("", "[::1", "a b", "evil.example", "localhost.evil.example", "127.0.0.1@x"):
        assert not allows("0.0.0.0", header), header


def test_annotate_serve_on_every_address_prints_urls_that_are_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`annotate serve --host 0.0.0.0`: prints this machine's URL and other machines' (never
    0.0.0.0); a server listening on 0.0.0.0 answers both, localhost, the machine's names, any
    IP address and the host of `--base-url` (behind a reverse proxy), and refuses another
    name (DNS rebinding) with 400. Requests go to 127.0.0.1 only, the Host header naming the
    rest."""
    from urllib.parse import urlsplit

    import httpx

    from builders.explore_runs import served

    monkeypatch.setattr(socket, "gethostname", lambda: "node7")
    monkeypatch.setattr(socket, "getfqdn", lambda name="": "node7.lab.example.org")
    study = make_study(tmp_path, "-b", "synthetic", "--sample", "2", "-k", "tot")
    apps: list[Any] = []
    monkeypatch.setattr("lexsem.annotate.http_server.run", lambda a, sock, **k: apps.append(a))
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    res = CliRunner().invoke(cli_app, ["annotate", "serve", str(study.path), "--host", "0.0.0.0",
                                       "--port", str(port), "--base-url",
                                       "https://study.example.org/"])  # fmt: skip
    assert res.exit_code == 0, res.output
    here, there = f"http://127.0.0.1:{port}/", f"http://node7.lab.example.org:{port}/"
    assert (
        f"serving {study.path} on {here} (from other machines: {there}) "
        "(public: https://study.example.org/) (Ctrl-C stops)"
    ) in res.output
    assert "0.0.0.0" not in res.output
    with served(apps[0], host="0.0.0.0") as base:

        def status(host: str) -> int:
            return httpx.get(f"{base}/static/style.css", headers={"host": host}).status_code

        for url in (here, there):
            assert status(urlsplit(url).netloc) == 200, url
        for host in ("localhost", "node7", "NODE7:80", "192.0.2.7:8765", "[2001:db8::7]:8765",
                     "study.example.org"):  # fmt: skip
            assert status(host) == 200, host
        for host in ("evil.example", "node7.lab.example.org.evil.example", "[node7]", ""):
            assert status(host) == 400, host
        refused = httpx.get(f"{base}/", headers={"host": "evil.example"}).text
        assert "'evil.example' is not a name of this server" in refused


def test_annotate_serve_on_one_address_answers_that_name_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`annotate serve` on 127.0.0.1 (the default): prints that URL; a request addressed to
    the machine's name or another IP address is refused."""
    import httpx

    from builders.explore_runs import served

    monkeypatch.setattr(socket, "gethostname", lambda: "node7")
    study = make_study(tmp_path, "-b", "synthetic", "--sample", "2", "-k", "tot")
    apps: list[Any] = []
    monkeypatch.setattr("lexsem.annotate.http_server.run", lambda a, sock, **k: apps.append(a))
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    res = CliRunner().invoke(cli_app, ["annotate", "serve", str(study.path), "--port",
                                       str(port)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert f"serving {study.path} on http://127.0.0.1:{port}/ (Ctrl-C stops)" in res.output
    with served(apps[0]) as base:

        def status(host: str) -> int:
            return httpx.get(f"{base}/static/style.css", headers={"host": host}).status_code

        assert status(f"127.0.0.1:{port}") == 200
        assert status("localhost") == 200
        for host in ("node7", "192.0.2.7", "evil.example"):
            assert status(host) == 400, host

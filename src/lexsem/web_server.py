"""How lexsem serves a web app (the study server, `lexsem explore`): the port taken before
any address is printed, the addresses printed and the host names answered, and uvicorn with
limits on slow and numerous clients.

- `listening(host, port)`: a socket bound and listening, or one `LexsemError` line naming the
  port (held by another server, or not to be had): an address is printed only once it is
  this server's.
- `open_urls(host, port)`: the addresses to print, ones a browser can open: `--host 0.0.0.0`
  (or ``::``, every address of the machine: reachable from other machines) prints
  ``http://127.0.0.1:PORT/`` for this machine and ``http://NAME:PORT/`` (the machine's name)
  for others, never ``http://0.0.0.0:PORT/``; an IPv6 address is bracketed.
- `HostCheck` (with `host_names`): requests are answered only when their ``Host`` header
  names this server, so that a page of another site cannot reach it through a DNS name of its
  own that resolves to this machine (DNS rebinding): 127.0.0.1, localhost and `--host`; for a
  wildcard `--host`, also the machine's names and any IP address (a request addressed to an
  address involves no DNS name, so no rebinding); any other name is 400.
- `serve(app, sock)`: a connection that has not sent a whole request's headers within
  `HEADER_TIMEOUT` seconds of opening (or of its previous response) is closed, so that
  connections dribbling their headers (a "slowloris") cannot pile up; an idle kept-alive
  connection is closed after `KEEP_ALIVE` seconds (uvicorn's `timeout_keep_alive`); at most
  `MAX_CONNECTIONS` requests run at once (more are answered 503 by uvicorn); every write is
  sent at once (``TCP_NODELAY``), so a response's body does not wait for the client's
  acknowledgement of its headers.
"""

from __future__ import annotations

import asyncio
import copy
import errno
import ipaddress
import logging
import os
import re
import socket
from typing import TYPE_CHECKING, Any

from lexsem.errors import LexsemError

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "HEADER_TIMEOUT",
    "KEEP_ALIVE",
    "MAX_CONNECTIONS",
    "HostCheck",
    "host_names",
    "is_wildcard",
    "listening",
    "open_urls",
    "serve",
]

#: Seconds a connection has to send a request's headers.
HEADER_TIMEOUT = 10.0
#: Seconds an idle kept-alive connection stays open.
KEEP_ALIVE = 5
#: Requests served at once (beyond: 503).
MAX_CONNECTIONS = 1000


def listening(host: str, port: int) -> socket.socket:
    """A socket listening on host:port; a port another server holds (or an address that
    cannot be had) is a `LexsemError` naming `--port` and the address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        hint = ("another server holds it: give another --port" if exc.errno == errno.EADDRINUSE
                else "give another --host or --port")  # fmt: skip
        raise LexsemError(
            f"--port {port}: cannot listen on {host}:{port} "
            f"({os.strerror(exc.errno) if exc.errno else exc}); {hint}"
        ) from None


def is_wildcard(host: str) -> bool:
    """Whether listening on `host` listens on every address of the machine (0.0.0.0, ::)."""
    return host in ("0.0.0.0", "::", "")


def _in_url(host: str) -> str:
    """`host` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def _machine_names() -> tuple[str, ...]:
    """This machine's names, lower-case (its fully qualified name first, when it has one that
    is not localhost): the names other machines may reach it by."""
    names = [socket.getfqdn().lower(), socket.gethostname().lower()]
    named = [n for n in names if n and not n.startswith("localhost")]
    return tuple(dict.fromkeys(sorted(named, key=lambda n: "." not in n)))


def open_urls(host: str, port: int) -> tuple[str, ...]:
    """The addresses to print for a server listening on host:port (see the module doc): the
    one to open on this machine, then, for a wildcard `host`, the one for other machines."""
    if not is_wildcard(host):
        return (f"http://{_in_url(host)}:{port}/",)
    local = "[::1]" if host == "::" else "127.0.0.1"
    names = _machine_names()
    return (f"http://{local}:{port}/", *(f"http://{_in_url(n)}:{port}/" for n in names[:1]))


def host_names(host: str) -> tuple[str, ...]:
    """The names a request to a server listening on `host` may be addressed to (its Host
    header, the port aside): 127.0.0.1, localhost and `host`, and for a wildcard `host` ::1
    and this machine's names (`HostCheck` takes any IP address as well there)."""
    if is_wildcard(host):
        return ("127.0.0.1", "localhost", "::1", *_machine_names())
    return tuple(dict.fromkeys(("127.0.0.1", "localhost", host.lower())))


#: A Host header: a name or IPv4 address, or an IPv6 address in brackets; then a port.
_HOST = re.compile(r"(?:\[([0-9a-f:.]+)\]|([^:\[\]@/\s]*))(?::[0-9]{1,5})?", re.IGNORECASE)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostCheck:
    """An ASGI middleware answering 400 to a request (HTTP or WebSocket) whose Host header is
    not one of `names` (`host_names`), nor, with `any_address`, an IP address: see the module
    doc. A Host header with an IPv6 address in brackets is compared without them."""

    def __init__(self, app: ASGIApp, names: tuple[str, ...], any_address: bool = False) -> None:
        self.app = app
        self.names = frozenset(n.lower() for n in names)
        self.any_address = any_address
        shown = ", ".join(dict.fromkeys(names)) + (" or an IP address" if any_address else "")
        self._why = (
            "is not a name of this server: it answers requests addressed to "
            f"{shown} (so that no page of another site reaches it through a name of its own)"
        )

    def allows(self, header: str) -> bool:
        """Whether a request with this Host header value is answered."""
        m = _HOST.fullmatch(header)
        if m is None:
            return False
        name = (m.group(1) or m.group(2)).lower()
        return name in self.names or (self.any_address and _is_address(name))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw = dict(scope["headers"]).get(b"host", b"")
        header = raw.decode("latin-1")
        if self.allows(header):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            from starlette.responses import PlainTextResponse

            text = f"Host {header!r} {self._why}"
            await PlainTextResponse(text, status_code=400)(scope, receive, send)


def _no_delay(transport: asyncio.BaseTransport) -> None:
    """Turn off Nagle's algorithm on a TCP connection. asyncio does so only for sockets made
    with ``IPPROTO_TCP`` as their protocol number, and `listening`'s (`socket.create_server`)
    and the connections it accepts have 0; with Nagle on, a response's body (a write after its
    headers) waits for the client's delayed acknowledgement, about 40 ms on Linux."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _header_deadline(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose next request's headers have not
    all arrived `seconds` after it opened or after its previous response, and sending each
    write at once (`_no_delay`)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineProtocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            _no_delay(transport)
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            self.loop.call_later(seconds, self._deadline, self.cycle)

        def _deadline(self, cycle: Any) -> None:
            idle = self.cycle is cycle and (cycle is None or cycle.response_complete)
            if idle and not self.transport.is_closing():
                self.transport.close()

    return DeadlineProtocol


def serve(
    app: Any,
    sock: socket.socket,
    *,
    access_log: bool = False,
    access_filter: logging.Filter | None = None,
    header_timeout: float = HEADER_TIMEOUT,
) -> None:
    """Serve `app` on `sock` (from `listening`) until interrupted (see the module doc); the
    access log (off unless asked for) goes to stderr, through `access_filter` if given."""
    import uvicorn
    import uvicorn.config

    logs = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    logs["handlers"]["access"]["stream"] = "ext://sys.stderr"  # beside uvicorn's other lines
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=_header_deadline(header_timeout),
        timeout_keep_alive=KEEP_ALIVE,
        limit_concurrency=MAX_CONNECTIONS,
        access_log=access_log,
        log_config=logs,
        log_level="info" if access_log else "warning",
    )
    if access_filter is not None:
        logging.getLogger("uvicorn.access").addFilter(access_filter)
    uvicorn.Server(config).run(sockets=[sock])

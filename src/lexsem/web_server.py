"""How lexsem serves a web app (the study server, `lexsem explore`): the port taken before
any address is printed, and uvicorn with limits on slow and numerous clients.

- `listening(host, port)`: a socket bound and listening, or one `LexsemError` line naming the
  port (held by another server, or not to be had): an address is printed only once it is
  this server's.
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
import logging
import os
import socket
from typing import Any

from lexsem.errors import LexsemError

__all__ = ["HEADER_TIMEOUT", "KEEP_ALIVE", "MAX_CONNECTIONS", "listening", "serve"]

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

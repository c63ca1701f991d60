"""The study app under uvicorn as `lexsem annotate serve` runs it: `run(app, host, port)`.

- Slow clients are closed: a connection that has not sent a whole request's headers within
  `HEADER_TIMEOUT` seconds of opening (or of its previous response) is closed, so that
  connections dribbling their headers (a "slowloris") cannot pile up; an idle kept-alive
  connection is closed after `KEEP_ALIVE` seconds (uvicorn's `timeout_keep_alive`), and
  at most `MAX_CONNECTIONS` requests run at once (more are answered 503 by uvicorn).
- The access log (off unless asked for) writes a link's path with its token redacted
  (`/a/…`, `/join/…`, `/admin/…`): a log never holds a secret link.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
from typing import Any

import uvicorn
import uvicorn.config
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT", "KEEP_ALIVE", "MAX_CONNECTIONS", "redact", "run"]

#: Seconds a connection has to send a request's headers.
HEADER_TIMEOUT = 10.0
#: Seconds an idle kept-alive connection stays open.
KEEP_ALIVE = 5
#: Requests served at once (beyond: 503).
MAX_CONNECTIONS = 1000

_LINK = re.compile(r"^/(a|join|admin)/[^/?#\s]+")


def redact(path: str) -> str:
    """`path` with the token of a link replaced by ``…``."""
    return _LINK.sub(r"/\1/…", path)


class _RedactLinks(logging.Filter):
    """Redact the path of uvicorn's access log records (their third argument)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact(args[2]), *args[3:])
        return True


def header_deadline(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose next request's headers have not
    all arrived `seconds` after it opened or after its previous response."""

    class DeadlineProtocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
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


def run(
    app: Any,
    host: str,
    port: int,
    *,
    access_log: bool = False,
    header_timeout: float = HEADER_TIMEOUT,
) -> None:
    """Serve `app` until interrupted (see the module doc)."""
    logs = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    logs["handlers"]["access"]["stream"] = "ext://sys.stderr"  # beside uvicorn's other lines
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=header_deadline(header_timeout),
        timeout_keep_alive=KEEP_ALIVE,
        limit_concurrency=MAX_CONNECTIONS,
        access_log=access_log,
        log_config=logs,
        log_level="info" if access_log else "warning",
    )
    logging.getLogger("uvicorn.access").addFilter(_RedactLinks())
    uvicorn.Server(config).run()

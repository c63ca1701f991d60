"""The study app under uvicorn as `lexsem annotate serve` runs it: `run(app, sock)` serves
with `lexsem.web_server`'s limits on slow and numerous clients; the access log (off unless
asked for) writes a link's path with its token redacted (`/a/…`, `/join/…`, `/admin/…`): a
log never holds a secret link. A participant's pages (`/s/…`, after the link's token was
exchanged for a session cookie) hold no token, and the log never writes a cookie.
"""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

from lexsem.web_server import HEADER_TIMEOUT, serve

__all__ = ["redact", "run"]

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


def run(
    app: Any,
    sock: socket.socket,
    *,
    access_log: bool = False,
    header_timeout: float = HEADER_TIMEOUT,
) -> None:
    """Serve `app` on `sock` (`lexsem.web_server.listening`) until interrupted."""
    serve(app, sock, access_log=access_log, access_filter=_RedactLinks(),
          header_timeout=header_timeout)  # fmt: skip

"""The security headers every lexsem web page is sent with (the study server, `lexsem
explore`): a content security policy given by the page's app, no referrer, no sniffing, no
framing, and nothing cached unless the response says otherwise."""

from __future__ import annotations

from typing import Any

__all__ = ["set_security_headers"]


def set_security_headers(message: dict[str, Any], csp: str) -> None:
    """Add the headers to an ASGI ``http.response.start`` `message` (other messages are left
    as they are)."""
    if message["type"] != "http.response.start":
        return
    from starlette.datastructures import MutableHeaders

    headers = MutableHeaders(scope=message)
    headers["Content-Security-Policy"] = csp
    headers["Referrer-Policy"] = "no-referrer"
    headers["X-Content-Type-Options"] = "nosniff"
    headers["X-Frame-Options"] = "DENY"
    if "cache-control" not in headers:
        headers["Cache-Control"] = "no-store"

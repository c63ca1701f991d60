"""The security headers every lexsem web page is sent with (the study server, `lexsem
explore`): a content security policy given by the page's app, no referrer, no sniffing, no
framing, and nothing cached unless the response says otherwise; `SecurityHeaders` is the
ASGI middleware that sends them with every response."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SecurityHeaders", "set_security_headers"]


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


class SecurityHeaders:
    """A plain ASGI middleware adding the headers to every HTTP response: `policy(scope)` gives
    the request's content security policy (and may note in `scope` what the request's page
    needs, e.g. its script nonce). It adds nothing to a request's cost but the headers."""

    def __init__(self, app: ASGIApp, policy: Callable[[Scope], str]) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = self.policy(scope)

        async def with_headers(message: Message) -> None:
            set_security_headers(message, csp)
            await send(message)

        await self.app(scope, receive, with_headers)

"""A participant's browser session: the personal link's token is exchanged once for a cookie
(OWASP ASVS 4.0.3, V3.1.1: no session token in a URL), so that the pages a participant works
on (``/s/...``) carry no secret in their address, forms, links or images.

- The cookie's value is a fresh random id (`new_session_id`, 256 bits), not the link's token;
  the study file keeps only its sha256 (`store.new_session`), as it keeps the links' tokens,
  so a copy of the file holds no live session. A stored random id, not a signed one: opening
  the link again ends the session before (one session per annotator), and revoking a link ends
  its session, which a stateless signed cookie could not do.
- ``HttpOnly`` (no script reads it), ``SameSite=Lax`` (a personal link or the join link is
  opened from another site, an e-mail or a crowd platform, in a top-level navigation: the 303
  that sets the cookie and the ``GET /s`` it leads to are part of that cross-site navigation,
  which a ``Strict`` cookie would not be sent with; ``Lax`` is sent with a top-level ``GET``
  and with the site's own forms, never with another site's ``POST``, and every form also
  carries a CSRF token), ``Path=/``, and ``Secure`` with the name prefix ``__Host-`` (ASVS
  V3.4.1, V3.4.4) where the study is served over https (``serve --base-url https://...``, or
  a request that arrived over https).
- It lasts `LIFETIME` (a day: ``Max-Age`` in the browser, and checked by the server from when
  the session began), long enough for a sitting and a break; after that, or in another
  browser, the participant opens their personal link again.
"""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["COOKIE", "LIFETIME", "SECURE_COOKIE", "cookie_value", "new_session_id", "set_cookie"]

#: The cookie's name over http (a study on this machine or a lab's network).
COOKIE = "lexsem-session"
#: The cookie's name over https: a ``__Host-`` cookie is Secure, host-only and for Path=/.
SECURE_COOKIE = "__Host-lexsem-session"
#: How long a session lasts, in seconds, from its start.
LIFETIME = 24 * 3600


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def set_cookie(response: Response, session_id: str, *, secure: bool) -> None:
    """Set the session cookie holding `session_id` on `response` (Starlette's own
    ``set_cookie``: HttpOnly, SameSite=Lax, Path=/, Secure and ``__Host-`` where `secure`)."""
    response.set_cookie(
        SECURE_COOKIE if secure else COOKIE,
        session_id,
        max_age=LIFETIME,
        path="/",
        secure=secure,
        httponly=True,
        samesite="lax",
    )


def cookie_value(request: Request) -> str | None:
    """The session id the request's cookie carries, or None."""
    return request.cookies.get(SECURE_COOKIE) or request.cookies.get(COOKIE) or None

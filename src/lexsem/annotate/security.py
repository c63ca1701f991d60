"""The study server's trust model: secret tokens stored hashed, CSRF tokens, rate limits.

- Every annotator, the admin and the crowd join link have a token from
  `secrets.token_urlsafe` (256 bits); the store keeps only its sha256, so a copy of the study
  file lets no one act as an annotator. Links are printed once, at creation or invitation.
- A form's CSRF token is an HMAC of the page's token hash under the study's secret (kept in
  the study file): it cannot be made without the secret and is checked on every POST.
- `RateLimiter`: at most `limit` requests per token in any `window` seconds (a sliding
  window in memory), beyond which the server answers 429.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque

__all__ = ["RateLimiter", "csrf_ok", "csrf_token", "hash_token", "new_secret", "new_token"]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def new_secret() -> str:
    return secrets.token_hex(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def csrf_token(secret: str, token_hash: str) -> str:
    return hmac.new(secret.encode(), f"csrf:{token_hash}".encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: str, token_hash: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(csrf_token(secret, token_hash), given)


class RateLimiter:
    """At most `limit` requests per key in any `window` seconds."""

    def __init__(self, limit: int = 120, window: float = 60.0) -> None:
        self.limit, self.window = limit, window
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - self.window:
                hits.popleft()
            if len(hits) >= self.limit:
                return False
            hits.append(now)
            return True

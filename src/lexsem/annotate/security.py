"""The study server's trust model: secret tokens stored hashed, CSRF tokens, rate limits.

- Every annotator, the admin and the crowd join link have a token from
  `secrets.token_urlsafe` (256 bits); the store keeps only its sha256, so a copy of the study
  file lets no one act as an annotator. Links are printed once, at creation or invitation.
  A personal link's token is exchanged for a session cookie (`lexsem.annotate.session`),
  whose random id is stored hashed the same way (`hash_token`).
- A form's CSRF token is an HMAC of a hash under the study's secret (kept in the study file):
  of a participant's session id, or of the join or admin link's token. It cannot be made
  without the secret and is checked on every POST.
- `same_secret` is the one comparison of a secret with what a client or a user gave (a CSRF
  token, a link's token hash, a completion code): in constant time, as UTF-8 bytes, so that
  a value that is not ASCII is a wrong value like any other (`hmac.compare_digest` raises on
  `str`s that are not ASCII).
- `RateLimiter`: a token bucket per key (`limit` requests, refilled over `window` seconds),
  beyond which the server answers 429. Its table is bounded (`max_keys`): a full bucket holds
  nothing worth keeping and is dropped first, then the least recently used; so no stream of
  distinct keys grows the server's memory. The server keys it by annotator (their link and
  their sessions) and by the admin link's token, by client address (`client_key`: an IPv6
  client by its /64, which one machine gets whole), and by address for the join link and for
  requests with an unknown token or no live session (which create no other state), so that
  no one client can use up another's requests.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import secrets
import threading
import time
from collections import OrderedDict

__all__ = [
    "RateLimiter",
    "client_key",
    "csrf_ok",
    "csrf_token",
    "hash_token",
    "new_secret",
    "new_token",
    "same_secret",
]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def new_secret() -> str:
    return secrets.token_hex(32)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def hash_token(token: str) -> str:
    return hashlib.sha256(_utf8(token)).hexdigest()


def csrf_token(secret: str, token_hash: str) -> str:
    return hmac.new(secret.encode(), f"csrf:{token_hash}".encode(), hashlib.sha256).hexdigest()


def same_secret(expected: str, given: str) -> bool:
    """Whether `given` is the secret `expected`, compared in constant time as UTF-8 bytes
    (a lone surrogate, which a command line's undecodable byte becomes, as itself): any text
    a client posts or a user types is a right or a wrong value, never an error."""
    return hmac.compare_digest(_utf8(expected), _utf8(given))


def csrf_ok(secret: str, token_hash: str, given: str | None) -> bool:
    return given is not None and same_secret(csrf_token(secret, token_hash), given)


@functools.lru_cache(maxsize=4096)
def client_key(host: str | None) -> str:
    """The rate-limit key of a client address: an IPv4 address, an IPv6 address's /64 network
    (one host gets a whole /64), anything else as given (the latest 4,096 addresses' keys kept:
    every request asks)."""
    if not host:
        return "?"
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        return str(ipaddress.IPv6Network((addr, 64), strict=False))
    return str(addr)


class RateLimiter:
    """At most `limit` requests per key in `window` seconds (a token bucket: `limit` at once,
    then one more every `window / limit` seconds), keeping at most `max_keys` keys."""

    def __init__(self, limit: int = 120, window: float = 60.0, max_keys: int = 10_000) -> None:
        if limit < 1 or window <= 0 or max_keys < 1:
            raise ValueError("a rate limit needs limit >= 1, window > 0 and max_keys >= 1")
        self.limit, self.window, self.max_keys = limit, window, max_keys
        self._rate = limit / window
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, t)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._buckets)

    def _tokens(self, key: str, now: float) -> float:
        tokens, then = self._buckets.get(key, (float(self.limit), now))
        return min(float(self.limit), tokens + (now - then) * self._rate)

    def allow(self, key: str) -> bool:
        """Count one request of `key`; False when its bucket is empty (nothing counted)."""
        now = time.monotonic()
        with self._lock:
            tokens = self._tokens(key, now)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                self._buckets.move_to_end(key)
                return False
            self._buckets[key] = (tokens - 1.0, now)
            self._buckets.move_to_end(key)
            if len(self._buckets) > self.max_keys:
                self._shrink(now)
            return True

    def _shrink(self, now: float) -> None:
        """Drop full buckets (they hold nothing), then the least recently used, to `max_keys`
        (less a tenth, so that a stream of new keys does not sweep the table every time)."""
        keep = self.max_keys - self.max_keys // 10
        for key in [k for k in self._buckets if self._tokens(k, now) >= self.limit]:
            del self._buckets[key]
        while len(self._buckets) > keep:
            self._buckets.popitem(last=False)

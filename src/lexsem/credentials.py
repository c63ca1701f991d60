"""Credentials out of everything lexsem writes or shows: URLs with a key in them.

A model spec may carry a URL that holds a credential: userinfo
(`openai:M?base_url=https://user:KEY@host/v1`) or a query parameter that carries a key
(`...?api_key=KEY`, `key=`, `token=`, `access_token=`, `sig=`, `signature=`, `secret=`,
`password=`, ...: any parameter whose name, or its last `_`/`-`/`.` part, is one of
`SECRET_NAMES`). lexsem sends such a URL as given, but every place that renders or stores it
(run.json's spec, name, fingerprint and provenance, the request store's keys, error messages,
warnings, progress lines, `lexsem report`) shows it through `redact` first: the userinfo
becomes `***@` and each secret parameter's value `***`. A URL without credentials is left
exactly as it is, so the store keys of such a model are unchanged.

Two URLs that differ only in their credentials therefore name the same endpoint and share the
request store: a credential chooses who pays for an answer, not what the answer is (as the
`Authorization` header read from `key_env`, which is not part of a key either).

URLs are found in free text (`scheme://...`) and in percent-encoded form
(`scheme%3A%2F%2F...`, as a canonical model spec writes an option's value). This module is
pure: no imports from the rest of lexsem.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

__all__ = ["SECRET", "SECRET_NAMES", "is_secret_name", "redact", "redact_url", "redacted"]

SECRET = "***"
SECRET_NAMES = frozenset({
    "key", "apikey", "token", "sig", "signature", "secret", "password", "passwd", "pwd",
    "auth", "authorization", "credential", "credentials", "jwt", "bearer", "session",
})  # fmt: skip

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_ENCODED_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*%3A%2F%2F[^\s'\"<>`&]+", re.IGNORECASE)
_SPLIT = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)$", re.DOTALL)
_PARAM = re.compile(r"([?&;#])([^=&;#?]+)=([^&;#]*)")


def is_secret_name(name: str) -> bool:
    """Whether a query parameter called `name` carries a credential (`api_key`, `token`,
    `X-Amz-Signature`: the name or its last `_`/`-`/`.` part is in `SECRET_NAMES`)."""
    words = re.split(r"[_.\-]", unquote(name).strip().lower())
    return "".join(words) in SECRET_NAMES or words[-1] in SECRET_NAMES


def redact_url(url: str) -> str:
    """`url` with its userinfo (`user:pass@`) written `***@` and the value of each secret
    query (or fragment) parameter `***`; any other URL, or text that is no URL, as it is."""
    m = _SPLIT.match(url)
    if m is None:
        return url
    scheme, authority, rest = m.groups()
    if "@" in authority:
        authority = SECRET + "@" + authority.rsplit("@", 1)[1]

    def param(p: re.Match[str]) -> str:
        sep, name, value = p.groups()
        return f"{sep}{name}={SECRET}" if value and is_secret_name(name) else p.group(0)

    return scheme + authority + _PARAM.sub(param, rest)


def _encoded(m: re.Match[str]) -> str:
    text = m.group(0)
    plain = unquote(text)
    shown = redact_url(plain)
    return text if shown == plain else quote(shown, safe="*")


def redact(text: str) -> str:
    """`text` with every URL in it (plain or percent-encoded) passed through `redact_url`."""
    if "//" not in text and "%2F%2F" not in text.upper():
        return text
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _ENCODED_URL.sub(_encoded, text)


def redacted(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with `redact` applied to every string,
    keys included; the value itself when nothing in it changes."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        items = [(redacted(k), redacted(v)) for k, v in value.items()]
        if all(a == k and b == v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        walked = [redacted(v) for v in value]
        if all(a == b for a, b in zip(walked, value, strict=True)):
            return value
        return type(value)(walked)
    return value

"""Content addresses for the request store: what was asked of a model, hashed.

A key names a *request* — what a model was asked to compute — never where its inputs came from:

- `content_key(kind, content)`: sha256 of ``kind + NUL + bytes``, the address of a text or an
  image (bytes as read, plus a decode-variant tag: `image_key`).
  Embeddings are stored under it (these keys are unchanged since the first cache schema, so
  existing caches keep serving their vectors).
- `request_key(kind, **parts)`: sha256 of the canonical JSON of ``{"kind": kind, **parts}``
  (`lexsem.digests.canonical_json`: sorted keys, no whitespace, UTF-8). Parts are JSON values:
  texts, prompts, generation parameters, and the `content_key` of any image involved (never
  its reference or path).

The two never collide: a canonical JSON object starts with ``{``, a content key's preimage
with ``text`` or ``image``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from lexsem.credentials import redacted
from lexsem.digests import json_sha256

if TYPE_CHECKING:
    from lexsem.images.decode import DecodeProfile

__all__ = [
    "CONTENT_KINDS",
    "chat_request_key",
    "content_key",
    "file_memo_key",
    "image_key",
    "image_request_key",
    "pair_key",
    "request_key",
    "text_score_key",
]

CONTENT_KINDS = frozenset({"text", "image"})


def content_key(kind: str, content: str | bytes) -> str:
    """The key of `content`: sha256 hex of ``kind + NUL + bytes``.

    `kind` is ``"text"`` or ``"image"``; text is encoded as UTF-8, bytes are used as-is.
    """
    if kind not in CONTENT_KINDS:
        raise ValueError(f"unknown content kind {kind!r}; expected one of {sorted(CONTENT_KINDS)}")
    if isinstance(content, str):
        data = content.encode("utf-8")
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
    h = hashlib.sha256(kind.encode("ascii"))
    h.update(b"\x00")
    h.update(data)
    return h.hexdigest()


def request_key(kind: str, **parts: Any) -> str:
    """The key of a request: sha256 hex of ``canonical_json({"kind": kind, **parts})``.

    Example: ``request_key("pair_score", image=content_key("image", data), text="a cat")``.
    """
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"a request kind must be a non-empty string, not {kind!r}")
    return json_sha256({"kind": kind, **parts})


# -- the recipes of each kind of stored result ------------------------------------------------


def image_key(
    data: bytes, *, exif_transpose: bool = True, profile: DecodeProfile | None = None
) -> str:
    """The store key of an image decoded as `profile` (default: RGB first, EXIF orientation as
    `exif_transpose` says): ``content_key("image", profile.key_tag + data)``.

    Decodes that may give other pixels (EXIF orientation or not, RGB first or raw mode) get keys
    of their own: the bytes are prefixed with a tag no image file starts with (none for RGB
    first with EXIF orientation, so those keys are plain content keys).
    """
    from lexsem.images.decode import flag_profile

    p = profile if profile is not None else flag_profile(exif_transpose)
    return content_key("image", p.key_tag + data)


def pair_key(image: str, text: str) -> str:
    """The store key of the score of (the image whose `image_key` is `image`, `text`): a
    scalar in the scorer's own database, keyed by the image's content, never its reference."""
    return request_key("pair_score", image=image, text=text)


def text_score_key(text: str) -> str:
    """The store key of a blind score of `text` (in the scorer's own database)."""
    return request_key("text_score", text=text)


def file_memo_key(ident: tuple[Any, ...]) -> str:
    """The store key of the image key remembered for a file, by what `os.stat` says of it
    (`lexsem.engine.image_scan`)."""
    return request_key("image_file_key", file=list(ident))


def chat_request_key(fingerprint: dict[str, Any], body: dict[str, Any]) -> str:
    """The store key of a chat request: the model's fingerprint and the request body with each
    image replaced by its content key (`lexsem.engine.chat.chat_key`). Free-form answers and
    log-probabilities are stored under their own kind, ``chat``. The fingerprint is keyed
    without the credentials of any URL in it (`lexsem.credentials`)."""
    return request_key("chat", model=redacted(fingerprint), body=body)


def image_request_key(fingerprint: dict[str, Any], body: dict[str, Any]) -> str:
    """The store key of an image-generation request (`lexsem.engine.image_gen`): the
    generator's fingerprint (without URL credentials) and the request body (prompt, the
    image's index, seed and saved size, extra parameters), under the kind ``image``."""
    return request_key("image", model=redacted(fingerprint), body=body)

"""`openai-image:` backend: an image generator behind an OpenAI-compatible
``/images/generations`` endpoint (OpenAI's image models, or a local server speaking the same
API), one image per request (`lexsem.models.image_gen`).

Spec: `openai-image:MODEL?base_url=URL&size=1024x1024&quality=hd&key_env=OPENAI_API_KEY`.
Each request sends ``{"model", "prompt", "n": 1, "response_format": "b64_json"}`` (and `size`,
`quality` when given; `response_format=omit` leaves that field out, for models that always
answer base64; `send_seed=true` also sends the request's seed, for servers that take one) and
reads the image from ``data[0].b64_json``. The image is saved as PNG, resized to the request's
`size` when it asks for one. The stored response keeps everything but the image (e.g.
``revised_prompt``).

As with the chat `openai:` backend: the key is read from the environment variable `key_env`
(default `OPENAI_API_KEY`; none is sent when it is unset) and is never written anywhere; a
credential inside `base_url` is sent as given and shown only as `***` (`lexsem.credentials`).
HTTP 429, 5xx, time-outs, dropped connections and answers without an image raise
`RetryableError` (the engine retries with backoff); any other HTTP error is a `ModelError`; no
connection at all raises `ConnectionFailed`. An API's images are not reproducible from a seed:
the store is what makes a rerun give the same images.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Mapping
from typing import Any, ClassVar

from lexsem.errors import RetryableError as Retryable
from lexsem.models.backends.openai_http import OpenAIEndpoint
from lexsem.models.image_gen import ImageRequest, png_bytes
from lexsem.models.options import Option, choice, flag
from lexsem.models.spec import ModelSpec

__all__ = ["OpenAIImage"]

BACKEND = "openai-image"
KEYED = "lexsem"  # the body's part that is keyed but not sent


def _number(text: str) -> float:
    return float(text)


class OpenAIImage(OpenAIEndpoint):
    """An image generator behind an OpenAI-compatible images API (see the module doc)."""

    backend: ClassVar[str] = BACKEND
    description = "an image generator behind an OpenAI-compatible images API (lexsem build)"
    options: ClassVar[Mapping[str, Option]] = {
        "base_url": Option(str, "https://api.openai.com/v1"),
        "key_env": Option(str, "OPENAI_API_KEY"),
        "timeout": Option(_number, 120.0),
        "size": Option(str),
        "quality": Option(str),
        "response_format": choice("b64_json", "omit", default="b64_json"),
        "send_seed": flag(False),
    }
    makes_images = True
    concurrency = 8

    def __init__(self, spec: ModelSpec | str, *, name: str | None = None, **_: Any) -> None:
        super().__init__(spec, BACKEND, "", name)
        self.size = self.spec.get("size")
        self.quality = self.spec.get("quality")
        self.response_format = str(self.spec.get("response_format"))
        self.send_seed = bool(self.spec.get("send_seed"))

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The endpoint, the model and what is sent with every request."""
        return {
            "backend": BACKEND,
            "base_url": self.endpoint,
            "model": self.model,
            "size": self.size,
            "quality": self.quality,
            "response_format": self.response_format,
            "send_seed": self.send_seed,
        }

    def request_body(self, request: ImageRequest) -> dict[str, Any]:
        """The body sent, and under `lexsem` what is keyed but not sent (the image's index,
        seed and saved size)."""
        body: dict[str, Any] = {"model": self.model, "prompt": request.prompt, "n": 1}
        if self.size is not None:
            body["size"] = self.size
        if self.quality is not None:
            body["quality"] = self.quality
        if self.response_format != "omit":
            body["response_format"] = self.response_format
        if self.send_seed and request.seed is not None:
            body["seed"] = request.seed
        body.update(request.params)
        body[KEYED] = {"index": request.index, "seed": request.seed, "size": request.size}
        return body

    def send(self, client: Any, body: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """One request: (the image as PNG bytes, the response without the image)."""
        sent = {k: v for k, v in body.items() if k != KEYED}
        size = (body.get(KEYED) or {}).get("size")
        resp = self.post(client, "/images/generations", sent)
        try:
            raw = resp.json()
            first = raw["data"][0]
            data = base64.b64decode(first["b64_json"], validate=True)
        except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
            raise Retryable(f"not an image response: {resp.text[:120]!r}") from None
        try:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as image:
                image.load()
                png = png_bytes(image, size)
        except (OSError, ValueError) as exc:
            raise Retryable(f"the image returned does not decode ({exc})") from None
        kept = {**raw, "data": [{k: v for k, v in first.items() if k != "b64_json"}]}
        return png, kept

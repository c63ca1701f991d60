"""`openai:` backend: a chat model behind an OpenAI-compatible `/chat/completions` endpoint
(OpenAI, vLLM, llama.cpp's server, Ollama, ...), asked a prompt about an image.

Spec: `openai:MODEL?base_url=URL&max_tokens=64&temperature=0&key_env=OPENAI_API_KEY`.

- The image goes as a base64 data URL (`image_url`), before the text, in one user message.
- The key is read from the environment variable `key_env` (default `OPENAI_API_KEY`; none is
  sent when it is unset, as local servers expect) and is never written anywhere: not in the
  fingerprint, the store, run files or errors.
- `send` makes one request: HTTP 429, 5xx, time-outs, dropped connections and bodies that are
  not the JSON of a chat completion raise `RetryableError` (the engine retries with backoff); any
  other HTTP error is a `ModelError` (a wrong model name or URL is not retried).

The fingerprint holds everything that changes an answer: the endpoint, the model and the
generation parameters, so answers of one setting are never served for another.
"""

from __future__ import annotations

import base64
import os
from typing import Any, ClassVar

from lexsem.errors import ModelError
from lexsem.errors import RetryableError as Retryable

__all__ = ["OpenAIChat"]

BACKEND = "openai"
_DEFAULTS = {
    "base_url": "https://api.openai.com/v1",
    "max_tokens": "64",
    "temperature": "0",
    "key_env": "OPENAI_API_KEY",
    "timeout": "60",
}


def _image_mime(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:3] == b"GIF":
        return "image/gif"
    return "image/jpeg"


class OpenAIChat:
    """A chat model asked one prompt (and one image) per request."""

    backend: ClassVar[str] = BACKEND

    def __init__(self, spec: str) -> None:
        from lexsem.models.spec import parse_query

        head, _, query = spec.strip().partition("?")
        backend, sep, model = head.partition(":")
        if not sep or backend.strip().lower() != BACKEND or not model.strip():
            raise ModelError(f"{spec!r} is not an openai: spec (openai:MODEL?base_url=URL&...)")
        options = parse_query(query, spec)
        unknown = sorted(set(options) - set(_DEFAULTS))
        if unknown:
            from lexsem.registry import did_you_mean

            hint = did_you_mean(unknown[0], list(_DEFAULTS))
            raise ModelError(
                f"{spec!r}: unknown option {unknown[0]!r}{hint} (options: {', '.join(_DEFAULTS)})"
            )
        self.options = {**_DEFAULTS, **options}
        self.model = model.strip()
        self.name = spec.strip()
        try:
            self.max_tokens = int(self.options["max_tokens"])
            self.temperature = float(self.options["temperature"])
            self.timeout = float(self.options["timeout"])
        except ValueError as exc:
            raise ModelError(f"{spec!r}: {exc}") from None
        self.base_url = self.options["base_url"].rstrip("/")

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": BACKEND,
            "base_url": self.base_url,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def body(self, prompt: str, image: bytes | None) -> dict[str, Any]:
        """The request body for `prompt` about `image` (the image as a data URL)."""
        content: list[dict[str, Any]] = []
        if image is not None:
            url = f"data:{_image_mime(image)};base64,{base64.b64encode(image).decode('ascii')}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        content.append({"type": "text", "text": prompt})
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def headers(self) -> dict[str, str]:
        key = os.environ.get(self.options["key_env"])
        return {"Authorization": f"Bearer {key}"} if key else {}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """One request: (the answer's text, the raw response JSON)."""
        import httpx

        try:
            resp = client.post(
                f"{self.base_url}/chat/completions", json=body, headers=self.headers(),
                timeout=self.timeout,
            )  # fmt: skip
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise Retryable(f"{type(exc).__name__}: {exc}") from None
        if resp.status_code == 429 or resp.status_code >= 500:
            raise Retryable(f"HTTP {resp.status_code}")
        if resp.status_code >= 400:
            raise ModelError(
                f"{self.name}: HTTP {resp.status_code} from {self.base_url}: {resp.text[:300]}"
            )
        try:
            raw = resp.json()
            text = raw["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retryable(f"not a chat completion: {resp.text[:120]!r}") from None
        if not isinstance(text, str):
            raise Retryable(f"no text in the answer: {text!r}")
        return text, raw

"""One request to an OpenAI-compatible API, as the `openai:` chat and `openai-image:` image
backends send it: the key read from an environment variable (never written anywhere), and the
HTTP failures sorted into what the engine retries and what it does not. `OpenAIEndpoint` is
what both backends share: their spec checked, the endpoint, key and time-out it names, `post`.

- No connection at all (refused, unknown host) raises `ConnectionFailed` naming the endpoint
  without its credentials (`lexsem.credentials`): the engine stops when nothing has been
  answered yet.
- Time-outs and dropped connections, HTTP 429 and 5xx raise `RetryableError` (the engine
  retries with backoff).
- Any other HTTP error (4xx: a wrong model name or URL) is a `ModelError`, not retried.
"""

from __future__ import annotations

import os
from typing import Any

from lexsem.credentials import redact, redact_url
from lexsem.errors import ConnectionFailed, ModelError
from lexsem.errors import RetryableError as Retryable
from lexsem.models.spec import ModelSpec, parse_model_spec

__all__ = ["OpenAIEndpoint", "bearer_headers", "post_json"]


def bearer_headers(key_env: str) -> dict[str, str]:
    """The authorisation header of the key in the environment variable `key_env` (none when it
    is unset, as local servers expect)."""
    key = os.environ.get(key_env)
    return {"Authorization": f"Bearer {key}"} if key else {}


def post_json(
    client: Any, base_url: str, path: str, body: dict[str, Any], *, headers: dict[str, str],
    timeout: float, name: str,
) -> Any:  # fmt: skip
    """POST `body` to `base_url` + `path` (an httpx client); the response when its status is
    below 400, else the errors of the module doc (`name`: the model, in errors)."""
    import httpx

    try:
        resp = client.post(f"{base_url}{path}", json=body, headers=headers, timeout=timeout)
    except httpx.ConnectError as exc:  # refused, no such host: nothing listens there
        raise ConnectionFailed(
            f"cannot connect to {redact_url(base_url)} " + redact(f"({type(exc).__name__}: {exc})")
        ) from None
    except (httpx.TimeoutException, httpx.TransportError) as exc:
        raise Retryable(redact(f"{type(exc).__name__}: {exc}")) from None
    if resp.status_code == 429 or resp.status_code >= 500:
        raise Retryable(f"HTTP {resp.status_code}")
    if resp.status_code >= 400:
        raise ModelError(
            f"{name}: HTTP {resp.status_code} from {redact_url(base_url)}: "
            + redact(resp.text[:300])
        )
    return resp


class OpenAIEndpoint:
    """A model behind an OpenAI-compatible API: its spec (of the backend `backend`; `usage`
    follows the error for another), the model's name on the server, the run's `name` for it
    without credentials, `base_url` (sent as given) and `endpoint` (without credentials: shown
    and keyed), the key's environment variable `key_env` and the `timeout` of a request."""

    def __init__(self, spec: ModelSpec | str, backend: str, usage: str, name: str | None) -> None:
        parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
        if parsed.backend != backend:
            raise ModelError(f"{redact(str(spec))!r} is not an {backend}: spec{usage}")
        self.spec = parsed
        self.model = parsed.name.strip()
        self.name = redact(name if name is not None else str(spec)).strip()
        self.key_env = str(parsed.get("key_env"))
        self.timeout = float(parsed.get("timeout"))
        self.base_url = str(parsed.get("base_url")).rstrip("/")  # sent as given
        self.endpoint = redact_url(self.base_url)  # shown and keyed: no credentials

    def headers(self) -> dict[str, str]:
        return bearer_headers(self.key_env)

    def post(self, client: Any, path: str, body: dict[str, Any]) -> Any:
        """POST `body` to the endpoint's `path` (`post_json`)."""
        return post_json(
            client, self.base_url, path, body, headers=self.headers(), timeout=self.timeout,
            name=self.name,
        )  # fmt: skip

"""The factory: a model spec string (or alias, or `ModelSpec`) → a lazy `TextEncoder`.

Building an encoder parses the spec and resolves the model's files (see `source.py`: a local
folder, the Hugging Face cache, a download, or a packaged offline copy) but loads no weights; that
happens on the first `encode`. `describe` gives the run metadata of a spec without loading.
"""

from __future__ import annotations

from typing import Any

from lexsem.models.base import LazyTextEncoder
from lexsem.models.hf_backend import HFTextEncoder
from lexsem.models.spec import ModelSpec, parse_model_spec
from lexsem.models.st_backend import SentenceTransformerEncoder

BACKEND_CLASSES: dict[str, type[LazyTextEncoder]] = {
    "st": SentenceTransformerEncoder,
    "hf": HFTextEncoder,
}


def load_text_encoder(
    spec: str | ModelSpec,
    *,
    device: str | None = None,
    dtype: str | None = None,
    max_length: int | None = None,
    offline: bool | None = None,
) -> LazyTextEncoder:
    """A lazy text encoder for `spec` (`st:NAME`, `hf:NAME?pooling=...`, or an alias).

    device: `auto`/None, `cpu`, `cuda`, `cuda:N`, `mps` (checked when first needed).
    dtype: `auto`/None, `fp32`, `fp16`, `bf16`; when given it overrides the spec's dtype option.
    max_length: overrides the spec's max_length option. offline: None → $LEXSEM_OFFLINE /
    $HF_HUB_OFFLINE. Raises ModelError for a bad spec or a model that cannot be found.
    """
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    name = spec if isinstance(spec, str) else None
    cls = BACKEND_CLASSES[parsed.backend]
    return cls(
        parsed, device=device, dtype=dtype, max_length=max_length, offline=offline, name=name
    )


def describe(
    spec: str | ModelSpec,
    *,
    device: str | None = None,
    dtype: str | None = None,
    max_length: int | None = None,
    offline: bool | None = None,
) -> dict[str, Any]:
    """Run metadata for a spec, without loading weights: spec string, alias, backend, resolved
    source (path, kind, hub commit), identity (commit or digest), dtype, device, fingerprint."""
    return load_text_encoder(
        spec, device=device, dtype=dtype, max_length=max_length, offline=offline
    ).describe()

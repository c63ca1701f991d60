"""The factory: a spec string (or alias, or `ModelSpec`) → a lazy model of a registered backend
(`lexsem.models.backend_registry`). Importing it imports no torch or transformers.

`load_model(spec)` looks the backend up and builds the model: it parses the spec (checked against
the backend's declared options) and resolves the model's files (see `source.py`: a local folder,
the Hugging Face cache, a download, or a packaged offline copy) but loads no weights; that happens
on first use. What the model can run follows from the protocols it implements (`protocols.py`);
`load_text_encoder` / `load_image_encoder` / `load_pair_scorer` / `load_text_scorer` check one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from lexsem.errors import ModelError
from lexsem.models.backend_registry import get_backend
from lexsem.models.protocols import ImageEncoder, PairScorer, TextEncoder, TextScorer
from lexsem.models.spec import ModelSpec, parse_model_spec

if TYPE_CHECKING:
    from typing_extensions import Unpack


class LoadOptions(TypedDict, total=False):
    """The keyword arguments of every loader, as `load_model` takes them."""

    device: str | None
    dtype: str | None
    max_length: int | None
    offline: bool | None


# -- the factory -------------------------------------------------------------------------------
def load_model(
    spec: str | ModelSpec,
    *,
    device: str | None = None,
    dtype: str | None = None,
    max_length: int | None = None,
    offline: bool | None = None,
) -> Any:
    """A lazy model for `spec`: a text encoder (`st:`, `hf:`), a dual encoder or BLIP-2 scorer
    (`clip:`, `openclip:`), an image-text matching head (`itm:`), a blind text scorer (`lm:`,
    `vera:`, `cola:`) or a user's backend. What it can run follows from the protocols it
    implements.

    device: `auto`/None, `cpu`, `cuda`, `cuda:N`, `mps` (checked when first needed).
    dtype, max_length: override the spec's options of those names. offline: None →
    $LEXSEM_OFFLINE / $HF_HUB_OFFLINE. Raises ModelError for a bad spec or a model that cannot
    be found.
    """
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    name = spec if isinstance(spec, str) else None
    backend = get_backend(parsed.backend)
    return backend(
        parsed, device=device, dtype=dtype, max_length=max_length, offline=offline, name=name
    )


def load_text_encoder(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> Any:
    """A lazy `TextEncoder` for `spec` (`st:NAME`, `hf:NAME?pooling=...`, `clip:NAME`,
    `openclip:ARCH/TAG`, or an alias); keyword arguments as for `load_model`. A `clip:` or
    `openclip:` encoder is also an `ImageEncoder` (BLIP-2: a `PairScorer`)."""
    model = load_model(spec, **options)
    if not isinstance(model, TextEncoder):
        raise ModelError(
            f"{model.name!r} is not a text encoder (backend {model.backend}:); "
            "load it with load_model"
        )
    return model


def load_image_encoder(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> Any:
    """A lazy model for `spec` that is an `ImageEncoder` as well as a `TextEncoder` (a dual
    encoder); ModelError for a text-only spec or a model without single-vector image embeddings
    (BLIP-2: use `load_pair_scorer`)."""
    model = load_text_encoder(spec, **options)
    if not isinstance(model, ImageEncoder):
        raise ModelError(_not_a(model, "an image encoder", "load_pair_scorer"))
    return model


def load_pair_scorer(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> Any:
    """A lazy `PairScorer` for `spec`: an `itm:` head, or BLIP-2 ITC (`clip:` on a blip-2
    checkpoint)."""
    model = load_model(spec, **options)
    if not isinstance(model, PairScorer):
        raise ModelError(_not_a(model, "a pair scorer", "load_image_encoder"))
    return model


def load_text_scorer(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> Any:
    """A lazy blind `TextScorer` for `spec` (`lm:NAME`, `vera:NAME`, `cola:NAME`, with
    `?options`); keyword arguments as for `load_model`, overriding the spec's options."""
    model = load_model(spec, **options)
    if not isinstance(model, TextScorer):
        raise ModelError(
            f"{spec!r} is not a text-scorer spec; use lm:NAME (causal-LM perplexity), "
            f"vera:NAME (Vera plausibility) or cola:NAME (CoLA grammar)"
        )
    return model


def _not_a(model: Any, what: str, other: str) -> str:
    family = getattr(model, "family", None)
    if family is None:
        return (
            f"model {model.name!r} ({model.backend}: backend) is text-only, not {what}; image "
            f"models use the clip: or openclip: backend"
        )
    return f"model {model.name!r} ({family.name}) is not {what}; use {other}"


def describe(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> dict[str, Any]:
    """Run metadata for a spec, without loading weights: spec string, alias, backend, resolved
    source (path, kind, hub commit), identity (commit or digest), dtype, device, fingerprint."""
    model = load_model(spec, **options)
    return model.describe()

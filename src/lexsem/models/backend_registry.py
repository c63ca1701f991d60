"""The model backends: backend name (a spec's `BACKEND:` prefix) -> its class or factory.

Each backend is one entry of `BACKENDS` (a `lexsem.registry.Registry`), a lazy `"module:attr"`
naming its class — or a factory that picks the class per model, as `clip:` does for BLIP-2 (see
`lazy.builds`). Its module is imported only when a spec of that backend is first parsed, so
importing this module imports no torch or transformers. Adding a backend is one file in
`backends/` and one line below; a user's backend is one `register_backend` call. Specs are
read by `lexsem.models.spec` and built by `lexsem.models.factory`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from lexsem.errors import LexsemError, ModelError
from lexsem.models.options import Option
from lexsem.registry import Registry, did_you_mean


def syntax() -> str:
    """The spec syntax, with the registered backends."""
    return f"BACKEND:NAME[?key=value&key=value] with BACKEND {', '.join(names())}, or an alias"


class Backend(Protocol):
    """What a registered backend is: a `LazyModel` subclass, or a factory marked with
    `base.builds`. Called as `backend(spec, device=..., dtype=..., max_length=..., offline=...,
    name=...)`; `options` declares what its specs may set."""

    backend: str
    description: str
    options: Mapping[str, Option]

    def __call__(self, spec: Any, **kwargs: Any) -> Any: ...  # spec: a ModelSpec

    def offline_needs(self, spec: Any) -> str | None:
        """None when `spec`'s model can be built here without the network, else what it needs
        (one line); `LazyModel` answers for files found as Hugging Face finds them."""
        ...


def _as_backend(obj: object) -> Backend:
    if not callable(obj) or not isinstance(getattr(obj, "options", None), Mapping):
        raise LexsemError(
            f"{obj!r} is not a model backend: register a LazyModel subclass (lexsem.models.lazy), "
            f"or a factory marked with lexsem.models.lazy.builds"
        )
    return obj  # type: ignore[return-value]


BACKENDS: Registry[Backend] = Registry("model backend", check=_as_backend)
BACKENDS.add("st", "lexsem.models.backends.st:SentenceTransformerEncoder")
BACKENDS.add("hf", "lexsem.models.backends.hf:HFTextEncoder")
BACKENDS.add("clip", "lexsem.models.backends.clip:open_dual_encoder")
BACKENDS.add("openclip", "lexsem.models.backends.openclip.encoder:OpenClipEncoder")
BACKENDS.add("itm", "lexsem.models.backends.itm:HFITMScorer")
BACKENDS.add("vqa", "lexsem.models.backends.vqa:VQAScorer")
BACKENDS.add("vgpt", "lexsem.models.backends.vgpt:VGPTScorer")
BACKENDS.add("vlm", "lexsem.models.backends.vlm_chat:VLMAnswerer")
BACKENDS.add("chat", "lexsem.models.backends.text_chat:TextChat")
BACKENDS.add("openai", "lexsem.models.backends.openai_chat:OpenAIChat")
BACKENDS.add("recorded", "lexsem.models.backends.recorded:RecordedChat")
BACKENDS.add("lm", "lexsem.models.backends.lm:PerplexityScorer")
BACKENDS.add("vera", "lexsem.models.backends.vera:PlausibilityScorer")
BACKENDS.add("cola", "lexsem.models.backends.cola:GrammarScorer")
BACKENDS.add("artifact", "lexsem.models.backends.artifact:ArtifactScorer")
BACKENDS.add("diffusers", "lexsem.models.backends.diffusers_gen:DiffusersGenerator")
BACKENDS.add("openai-image", "lexsem.models.backends.openai_image:OpenAIImage")

# what a built-in backend needs beyond lexsem's own dependencies (`lexsem list backends` says
# it without importing the backend); the others need nothing more
BACKEND_EXTRAS: dict[str, str] = {
    "openclip": "lexsem[openclip]",
    "vqa": "lexsem[gen] for SmolVLM",
    "vgpt": "lexsem[gen] for SmolVLM",
    "vlm": "lexsem[gen] for SmolVLM",
    "diffusers": "lexsem[images]",
}

_NAME = re.compile(r"^[a-z][a-z0-9_-]+$")  # what a spec's BACKEND: prefix can be


def register_backend(name: str, backend: str | type | Backend, *, replace: bool = False) -> None:
    """Register a model backend under `name`, so that `name:NAME?options` specs load it.

    `backend`: a `LazyModel` subclass whose `backend` is `name` (see `lexsem.models.lazy`), a
    factory marked with `base.builds`, or a lazy `"package.module:attr"` naming either (imported
    when a spec of that backend is first parsed). A taken name (a built-in one too) is refused
    unless `replace`.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise LexsemError(
            f"a model backend name is lowercase letters, digits, '-' or '_' (two characters at "
            f"least, starting with a letter), got {name!r}"
        )
    declared = getattr(backend, "backend", name)
    if not isinstance(backend, str) and declared != name:
        raise LexsemError(f"{backend!r} is the {declared!r} backend, not {name!r}")
    BACKENDS.add(name, backend, replace=replace)  # type: ignore[arg-type]


def unregister_backend(name: str) -> None:
    """Remove a backend registered with `register_backend`."""
    BACKENDS.remove(name)


def names() -> list[str]:
    """The registered backend names, sorted."""
    return BACKENDS.names()


def get_backend(name: str) -> Backend:
    """The backend registered as `name` (importing its module on first use); ModelError naming
    the known backends when there is none."""
    if name not in BACKENDS:
        raise ModelError(
            f"unknown model backend {name!r}{did_you_mean(name, names())}; known backends: "
            f"{_listing()}. Syntax: {syntax()}"
        )
    backend = BACKENDS.get(name)
    if getattr(backend, "backend", name) != name:
        raise ModelError(
            f"backend {name!r} is registered to {backend!r}, which is {backend.backend!r}"
        )
    return backend


def offline_needs(spec: Any) -> str | None:
    """None when the model of `spec` (a parsed `ModelSpec`) can be built here without the
    network, else what it needs (one line), as its backend says; a backend that does not say
    (a user's hand-made factory) is taken to need the network."""
    try:
        backend = get_backend(spec.backend)
    except ImportError as exc:
        extra = BACKEND_EXTRAS.get(spec.backend, f"the {spec.backend} backend's dependencies")
        return f"{extra} ({' '.join(str(exc).split())[:200]})"
    answer = getattr(backend, "offline_needs", None)
    if answer is None:
        return f"the network: backend {spec.backend!r} does not say what it needs offline"
    return answer(spec)


def _listing() -> str:
    out = []
    for name in names():
        try:
            about = getattr(BACKENDS.get(name), "description", "")
        except Exception:  # a user's entry that does not import: still list its name
            about = ""
        out.append(f"{name} ({about})" if about else name)
    return ", ".join(out)


def option_error(backend: str, key: str) -> str:
    """Why option `key` is refused for `backend`: the backend's own hint about it, or which
    backends take it, and the options `backend` takes."""
    own = get_backend(backend)
    takes = f"backend {backend!r} takes: {', '.join(sorted(own.options)) or 'no options'}"
    hint = getattr(own, "option_hints", {}).get(key)
    others = [n for n in names() if n != backend and key in _options_of(n)]
    if hint:
        why = f"option {key!r} does not apply to backend {backend!r}: {hint}"
    elif others:
        why = f"option {key!r} does not apply to backend {backend!r} (only to: {', '.join(others)})"
    else:
        why = f"unknown model option {key!r}{did_you_mean(key, sorted(own.options))}"
    return f"{why}; {takes}"


def _options_of(name: str) -> Mapping[str, Option]:
    try:
        return BACKENDS.get(name).options
    except Exception:  # a user's entry that does not import
        return {}

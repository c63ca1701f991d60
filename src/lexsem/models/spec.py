"""Model spec strings: `BACKEND:NAME[?key=value&key=value]`, or a short alias.

BACKEND is a registered backend (`lexsem.models.backend_registry`: `st`, `hf`, `clip`,
`openclip`, `itm`, `lm`, `vera`, `cola`, `vqa`, `vgpt`, `vlm`, `openai`, `recorded`, or a
user's). NAME is a Hugging Face Hub id (`org/name`) or a local folder
(openclip: `ARCH/PRETRAINED` or `ARCH@/path/to/checkpoint`). Options are URL-query style: split on
`&` and `=`, values URL-decoded (`%26` for a literal `&`, `%3D` for `=`, `+` or `%20` for a space,
`%2B` for a literal `+`). Everything after the first `?` is options, so a NAME cannot contain `?`.

Which options a backend takes, their values and defaults, are declared once, on the backend
(`options`, see `options.py`); a spec is checked against that declaration when it is built, and
`spec.get(key)` gives an option's typed value (its default when the spec leaves it out).

A string without a `BACKEND:` prefix is an alias (`lexsem list models`); an alias may carry its
own `?options`, which override the alias's (`minilm?max_length=128`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_plus

from lexsem.errors import ModelError
from lexsem.models.backend_registry import get_backend, option_error, syntax
from lexsem.models.options import Option, as_option_text

# "xx:" at the start: a backend prefix. Two characters at least, so `C:\models` is not one.
_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_-]+):(.*)$", re.DOTALL)
_EXCLUSIVE = ("prefix", "template")  # a template can hold a prefix: give one of the two


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec. `options` holds the URL-decoded option strings, checked against the
    backend's declared options (and in their canonical spelling)."""

    backend: str
    name: str
    options: dict[str, str] = field(default_factory=dict)
    alias: str | None = field(default=None, compare=False)  # the alias it came from, if any

    def __post_init__(self) -> None:
        declared = _declared_options(self.backend)
        if not self.name:
            raise ModelError(
                f"model spec for backend {self.backend!r} has an empty NAME; {syntax()}"
            )
        object.__setattr__(self, "options", _checked(self.backend, declared, self.options))
        if all(key in self.options for key in _EXCLUSIVE):
            raise ModelError("give either prefix or template, not both (a template can hold both)")

    def get(self, key: str) -> Any:
        """The typed value of option `key`: parsed from the spec, else the backend's default;
        None for an option the backend does not take."""
        option = _declared_options(self.backend).get(key)
        if option is None:
            return None
        raw = self.options.get(key)
        return option.default if raw is None else option.read(key, raw)

    def with_options(self, **values: object) -> ModelSpec:
        """This spec with `values` set (None: left as it is); a prefix replaces the template and
        a template the prefix."""
        given = {k: as_option_text(v) for k, v in values.items() if v is not None}
        merged = {k: v for k, v in self.options.items() if not _displaced(k, given)}
        return ModelSpec(self.backend, self.name, {**merged, **given}, alias=self.alias)

    # -- typed views of the common options ------------------------------------------------------
    @property
    def pooling(self) -> str | None:
        return self.get("pooling")

    @property
    def normalize(self) -> bool:
        return bool(self.get("normalize"))

    @property
    def max_length(self) -> int | None:
        return self.get("max_length")

    @property
    def prefix(self) -> str | None:
        return self.get("prefix")

    @property
    def template(self) -> str | None:
        return self.get("template")

    @property
    def revision(self) -> str | None:
        return self.get("revision")

    @property
    def trust_remote_code(self) -> bool:
        return bool(self.get("trust_remote_code"))

    @property
    def dtype(self) -> str | None:
        """The dtype option (`auto`, `fp32`, `fp16`, `bf16`); None when the spec leaves it out
        (`lexsem.models.device.dtype_choice` says what each runs in)."""
        return self.get("dtype")

    def format_text(self, text: str) -> str:
        """The text as the model sees it: with the prefix prepended or put into the template."""
        if self.template is not None:
            return self.template.replace("{text}", text)
        if self.prefix is not None:
            return self.prefix + text
        return text

    def to_string(self) -> str:
        """The canonical spec string (options sorted, values URL-encoded); parses back equal."""
        if not self.options:
            return f"{self.backend}:{self.name}"
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in sorted(self.options.items()))
        return f"{self.backend}:{self.name}?{query}"

    def __str__(self) -> str:
        return self.to_string()


def _displaced(key: str, given: Mapping[str, str]) -> bool:
    """Whether option `key` gives way to the newly given options (prefix ↔ template)."""
    return key in _EXCLUSIVE and any(k in given for k in _EXCLUSIVE)


def _declared_options(backend: str) -> Mapping[str, Option]:
    return get_backend(backend).options


def _checked(
    backend: str, declared: Mapping[str, Option], options: dict[str, str]
) -> dict[str, str]:
    """The options in canonical spelling; ModelError for one the backend does not take or a
    value its declaration refuses."""
    out: dict[str, str] = {}
    for key, raw in options.items():
        option = declared.get(key)
        if option is None:
            raise ModelError(option_error(backend, key))
        option.read(key, raw)
        out[key] = option.canonical(raw) if option.canonical else raw
    return out


def parse_query(query: str, spec: str) -> dict[str, str]:
    """`key=value&key=value` → the URL-decoded options; ModelError for a malformed or repeated
    option (`spec` is named in the message)."""
    options: dict[str, str] = {}
    for part in query.split("&") if query else ():
        if not part:
            continue
        key, sep, raw = part.partition("=")
        key = unquote_plus(key).strip()
        if not sep or not key:
            raise ModelError(f"model spec {spec!r}: option {part!r} is not key=value")
        if key in options:
            raise ModelError(f"model spec {spec!r}: option {key!r} is given twice")
        options[key] = unquote_plus(raw)
    return options


def parse_model_spec(s: str, *, backend: str | None = None) -> ModelSpec:
    """Parse `BACKEND:NAME[?options]` or an alias (optionally with `?options` overriding the
    alias's). With `backend`, a string that has no prefix and is no alias is a NAME of that
    backend. Raises ModelError naming the unknown backend, option, value or alias."""
    if not isinstance(s, str) or not s.strip():
        raise ModelError(f"empty model spec; {syntax()}")
    head, _, query = s.strip().partition("?")
    options = parse_query(query, s)
    m = _PREFIX.match(head)
    if m is not None:
        return ModelSpec(m.group(1).lower(), m.group(2).strip(), options)

    from lexsem.models.aliases import ALIASES

    alias = head.strip().lower()
    if alias in ALIASES:
        base = parse_model_spec(ALIASES.get(alias).spec)
        return ModelSpec(base.backend, base.name, base.options, alias=alias).with_options(**options)
    if backend is not None:
        return ModelSpec(backend, head.strip(), options)
    raise ModelError(_unknown_alias(s))


def _unknown_alias(s: str) -> str:
    from lexsem.models.aliases import list_aliases
    from lexsem.registry import did_you_mean

    head = s.strip().partition("?")[0].lower()
    return (
        f"unknown model {s!r}{did_you_mean(head, list(list_aliases()))}: not an alias (known: "
        f"{', '.join(list_aliases())}) and no backend "
        f"prefix. Syntax: {syntax()}, e.g. st:sentence-transformers/all-MiniLM-L6-v2 or "
        f"hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true or hf:/path/to/folder"
    )

"""Model options: what a backend accepts after the `?` of its spec, declared once per backend.

A backend class declares `options`, a mapping option name → `Option`: a parser from the spec's
string value to a typed value, and the default when the spec leaves the option out. `ModelSpec`
checks a spec's options against that declaration (an option the backend does not declare is an
error naming it and listing the ones it takes) and gives the typed values (`spec.get(name)`).
The shared declarations below are combined by the backends (`{**COMMON, **TEXT_INPUT, ...}`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.device import DTYPE_CHOICES, normalize_dtype

_BOOL = {"true": True, "false": False}


@dataclass(frozen=True)
class Option:
    """One declared option. `parse` turns the spec's string into the typed value, raising
    ValueError with what it expects; `canonical` rewrites the string kept in the spec (e.g.
    `TRUE` → `true`), so that equal values spell one canonical spec string."""

    parse: Callable[[str], Any]
    default: Any = None
    canonical: Callable[[str], str] | None = None

    def read(self, key: str, raw: str) -> Any:
        """The typed value of `raw`; ModelError naming the option, the value and what it takes."""
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise ModelError(f"option {key}={raw!r}: {exc}") from None


Options = Mapping[str, Option]


def expected(values: tuple[str, ...]) -> str:
    """`a or b`, or `one of a, b, c`."""
    if len(values) == 2:
        return f"expected {values[0]} or {values[1]}"
    return f"expected one of {', '.join(values)}"


def as_option_text(value: object) -> str:
    """A keyword argument's value as the spec string would give it (`True` → `true`)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- parsers -------------------------------------------------------------------------------------
def parse_bool(text: str) -> bool:
    key = text.strip().lower()
    if key not in _BOOL:
        raise ValueError("expected true or false")
    return _BOOL[key]


def parse_positive_int(text: str) -> int:
    stripped = text.strip()
    if not (stripped.isascii() and stripped.isdigit() and int(stripped) > 0):
        raise ValueError("expected a positive integer")
    return int(stripped)


def parse_dtype(text: str) -> str:
    try:
        return normalize_dtype(text)
    except ModelError:
        raise ValueError(f"unknown dtype; {expected(DTYPE_CHOICES)}") from None


def parse_template(text: str) -> str:
    if "{text}" not in text:
        raise ValueError("it must contain the placeholder {text}")
    return text


def parse_revision(text: str) -> str:
    if not text.strip():
        raise ValueError("empty; give a hub branch, tag or commit")
    return text


def choice(*values: str, default: str | None = None) -> Option:
    """An option taking one of `values`."""

    def parse(text: str) -> str:
        if text not in values:
            raise ValueError(expected(values))
        return text

    return Option(parse, default)


def flag(default: bool | None) -> Option:
    """A true/false option (case-insensitive; kept lowercase in the spec string)."""
    return Option(parse_bool, default, canonical=lambda text: text.strip().lower())


def positive_int(default: int | None = None) -> Option:
    return Option(parse_positive_int, default)


# -- shared declarations -------------------------------------------------------------------------
COMMON: dict[str, Option] = {
    "revision": Option(parse_revision),  # hub branch, tag or commit (default: main)
    "trust_remote_code": flag(False),
    "dtype": Option(parse_dtype),  # None: fp32 on a CPU (`device.dtype_choice`)
    "max_length": positive_int(),  # tokens; default: the model's own limit
}
"""What every transformers-based backend takes."""

TEXT_INPUT: dict[str, Option] = {
    "prefix": Option(str),  # text prepended to every input (e.g. `query: `)
    "template": Option(parse_template),  # text with a `{text}` placeholder
}
"""How a text encoder's inputs are formatted (give one of the two)."""

NORMALIZE: dict[str, Option] = {"normalize": flag(False)}
"""Whether a text encoder L2-normalises its embeddings (the cosine is taken downstream anyway)."""

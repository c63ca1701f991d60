"""Model spec strings: `BACKEND:NAME[?key=value&key=value]`, or a short alias.

Backends: `st` (sentence-transformers), `hf` (transformers `AutoModel` + pooling) and `clip`
(transformers dual encoders — CLIP, SigLIP, SigLIP 2, ALIGN, AltCLIP, FLAVA, BLIP/BLIP-2 ITC —
text and image towers, the family read from config.json; see `hf_dual.py`). NAME is a Hugging
Face Hub id (`org/name`) or a local folder. Options are URL-query style: split on `&` and `=`,
values URL-decoded (`%26` for a literal `&`, `%3D` for `=`, `+` or `%20` for a space,
`%2B` for a literal `+`). Everything after the first `?` is options, so a NAME cannot contain `?`.

| option | values | backends | default |
|---|---|---|---|
| pooling | mean, cls, last | hf | mean |
| normalize | true, false | st, hf | false (the cosine is taken downstream anyway) |
| max_length | positive int (tokens) | st, hf, clip | the model's own limit (clip: the family's) |
| prefix | text prepended to every input (e.g. `query: `) | st, hf, clip | none |
| template | text with a `{text}` placeholder | st, hf, clip | none |
| revision | hub branch, tag or commit | st, hf, clip | main |
| trust_remote_code | true, false | st, hf, clip | false |
| dtype | auto, fp32, fp16, bf16 | st, hf, clip | auto |

A string without a `BACKEND:` prefix is an alias (`lexsem list models`); an alias may carry its
own `?options`, which override the alias's (`minilm?max_length=128`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

from lexsem.errors import ModelError
from lexsem.models.device import DTYPE_CHOICES, normalize_dtype

BACKENDS = {
    "st": "sentence-transformers",
    "hf": "transformers AutoModel + pooling",
    "clip": "transformers dual encoders (CLIP, SigLIP, ALIGN, AltCLIP, FLAVA, BLIP/BLIP-2 ITC)",
    "itm": "transformers image-text matching heads (FLAVA, BLIP, BLIP-2, ViLT): pair scorers",
    "lm": "causal-LM perplexity (AutoModelForCausalLM): a blind text scorer",
    "vera": "Vera plausibility (T5 encoder + scalar head): a blind text scorer",
    "cola": "CoLA grammar classifier (sequence classification): a blind text scorer",
    "openclip": "open_clip models: ARCH/PRETRAINED tag or ARCH@/path/to/checkpoint",
}
POOLINGS = ("mean", "cls", "last")
SYNTAX = (
    "BACKEND:NAME[?key=value&key=value] with BACKEND st, hf, clip, openclip, itm, lm, vera or "
    "cola, "
    "or an alias"
)

_BOOL = {"true": True, "false": False}
_OPTION_BACKENDS = {
    "pooling": ("hf",),
    "normalize": ("st", "hf"),
    "max_length": ("st", "hf", "clip", "itm", "lm", "vera", "cola"),
    "prefix": ("st", "hf", "clip", "openclip"),
    "template": ("st", "hf", "clip", "openclip"),
    "revision": ("st", "hf", "clip", "itm", "lm", "vera", "cola"),
    "trust_remote_code": ("st", "hf", "clip", "itm", "lm", "vera", "cola"),
    "dtype": ("st", "hf", "clip", "openclip", "itm", "lm", "vera", "cola"),
    "quick_gelu": ("openclip",),
    "score": ("itm",),
    "add_bos": ("lm",),
    "calibrate": ("vera",),
    "label": ("cola",),
}
OPTIONS = tuple(_OPTION_BACKENDS)
# "xx:" at the start: a backend prefix. Two characters at least, so `C:\models` is not one.
_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9_-]+):(.*)$", re.DOTALL)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec. `options` holds the validated, URL-decoded option strings."""

    backend: str
    name: str
    options: dict[str, str] = field(default_factory=dict)
    alias: str | None = field(default=None, compare=False)  # the alias it came from, if any

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ModelError(_bad_backend(self.backend))
        if not self.name:
            raise ModelError(f"model spec for backend {self.backend!r} has an empty NAME; {SYNTAX}")
        for key, value in self.options.items():
            _check_option(self.backend, key, value)
        if "prefix" in self.options and "template" in self.options:
            raise ModelError("give either prefix or template, not both (a template can hold both)")

    # -- typed views of the options ---------------------------------------------------------
    @property
    def pooling(self) -> str:
        return self.options.get("pooling", "mean")

    @property
    def normalize(self) -> bool:
        return _BOOL[self.options.get("normalize", "false").lower()]

    @property
    def max_length(self) -> int | None:
        v = self.options.get("max_length")
        return int(v) if v is not None else None

    @property
    def prefix(self) -> str | None:
        return self.options.get("prefix")

    @property
    def template(self) -> str | None:
        return self.options.get("template")

    @property
    def revision(self) -> str | None:
        return self.options.get("revision")

    @property
    def trust_remote_code(self) -> bool:
        return _BOOL[self.options.get("trust_remote_code", "false").lower()]

    @property
    def dtype(self) -> str:
        return normalize_dtype(self.options.get("dtype"))

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


def _bad_backend(backend: str) -> str:
    known = ", ".join(f"{k} ({v})" for k, v in BACKENDS.items())
    return f"unknown model backend {backend!r}; known backends: {known}. Syntax: {SYNTAX}"


def _check_option(backend: str, key: str, value: str) -> None:
    if key not in _OPTION_BACKENDS:
        raise ModelError(f"unknown model option {key!r}; known options: {', '.join(OPTIONS)}")
    if backend not in _OPTION_BACKENDS[key]:
        raise ModelError(
            f"option {key!r} does not apply to backend {backend!r} "
            f"(only to: {', '.join(_OPTION_BACKENDS[key])})"
            + (
                "; a sentence-transformers model's pooling is in its own config"
                if key == "pooling"
                else ""
            )
        )
    if key == "pooling" and value not in POOLINGS:
        raise ModelError(f"option pooling={value!r}: expected one of {', '.join(POOLINGS)}")
    elif key == "score" and value not in ("prob", "logit"):
        raise ModelError(f"option score={value!r}: expected prob or logit")
    elif (
        key in ("normalize", "trust_remote_code", "add_bos", "calibrate", "quick_gelu")
        and value.lower() not in _BOOL
    ):
        raise ModelError(f"option {key}={value!r}: expected true or false")
    elif key == "max_length" and not (value.isascii() and value.isdigit() and int(value) > 0):
        raise ModelError(f"option max_length={value!r}: expected a positive integer")
    elif key == "template" and "{text}" not in value:
        raise ModelError(f"option template={value!r}: it must contain the placeholder {{text}}")
    elif key == "revision" and not value.strip():
        raise ModelError("option revision is empty")
    elif key == "dtype":
        try:
            normalize_dtype(value)
        except ModelError:
            raise ModelError(
                f"option dtype={value!r}: expected one of {', '.join(DTYPE_CHOICES)}"
            ) from None


def _parse_query(query: str, spec: str) -> dict[str, str]:
    from urllib.parse import unquote_plus

    options: dict[str, str] = {}
    if not query:
        return options
    for part in query.split("&"):
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


def parse_model_spec(s: str) -> ModelSpec:
    """Parse `BACKEND:NAME[?options]` or an alias (optionally with `?options` overriding the
    alias's). Raises ModelError naming the unknown backend, option, value or alias."""
    if not isinstance(s, str) or not s.strip():
        raise ModelError(f"empty model spec; {SYNTAX}")
    text = s.strip()
    head, _, query = text.partition("?")
    options = _parse_query(query, s)
    m = _PREFIX.match(head)
    if m is not None:
        backend, name = m.group(1).lower(), m.group(2).strip()
        if backend not in BACKENDS:
            raise ModelError(_bad_backend(m.group(1)))
        return ModelSpec(backend, name, options)

    from lexsem.models.aliases import ALIASES, list_aliases

    alias = head.strip().lower()
    if alias not in ALIASES:
        names = ", ".join(list_aliases())
        raise ModelError(
            f"unknown model {s!r}: not an alias (known: {names}) and no backend prefix. "
            f"Syntax: {SYNTAX}, e.g. st:sentence-transformers/all-MiniLM-L6-v2 or "
            f"hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true or hf:/path/to/folder"
        )
    base = parse_model_spec(ALIASES[alias])
    merged = {**base.options, **options}
    if "template" in options:
        merged.pop("prefix", None)
    if "prefix" in options:
        merged.pop("template", None)
    return ModelSpec(base.backend, base.name, merged, alias=alias)

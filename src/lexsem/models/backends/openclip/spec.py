"""The `openclip:` spec: NAME is `ARCH/PRETRAINED` (a tag of open_clip's pretrained registry),
`ARCH@/path/to/checkpoint` (a local checkpoint for a registered arch) or
`/path/to/arch.json@/path/to/checkpoint` (a custom architecture, `custom_arch`); options as
in `lexsem.models.spec` (docs/openclip.md has the long version)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.backends.openclip.custom_arch import custom_arch
from lexsem.models.backends.openclip.install import BACKEND
from lexsem.models.spec import ModelSpec, parse_query

SYNTAX = (
    "openclip:ARCH/PRETRAINED, openclip:ARCH@/path/to/checkpoint.pt or "
    "openclip:/path/to/arch.json@/path/to/checkpoint.pt [?options]"
)


def _is_config_file(arch: str) -> bool:
    return arch.lower().endswith(".json")


def _split_name(name: str) -> tuple[str, str | None, str | None]:
    """NAME → (arch, pretrained tag or None, checkpoint path or None); a custom arch's model
    config file is returned as the arch, as written."""
    text = name.strip()
    if "@" in text:
        arch, _, path = text.partition("@")
        arch, path = arch.strip(), path.strip()
        if not arch or not path:
            raise ModelError(f"open_clip model {name!r}: expected ARCH@/path/to/checkpoint")
        if _is_config_file(arch):
            return arch, None, path
        tag = None
    else:
        arch, sep, tag_str = text.rpartition("/")
        arch, tag_str = arch.strip(), tag_str.strip()
        if not sep or not arch or not tag_str:
            raise ModelError(
                f"open_clip model {name!r} names no weights; {SYNTAX} "
                f"(e.g. openclip:ViT-B-32-quickgelu/openai)"
            )
        tag, path = tag_str, None
        if _is_config_file(arch) or _is_config_file(text):
            raise ModelError(
                f"open_clip model {name!r}: a custom architecture (a model config .json) takes "
                "a local checkpoint: openclip:/path/to/arch.json@/path/to/checkpoint.pt"
            )
    if arch.startswith(("hf-hub:", "local-dir:")):
        raise ModelError(
            f"open_clip model {name!r}: hf-hub:/local-dir: sources are not supported; use a "
            f"registry tag (ARCH/PRETRAINED) or a checkpoint file (ARCH@/path)"
        )
    # open_clip itself accepts OpenAI-style names (ViT-B/32) and maps them to ViT-B-32
    return arch.replace("/", "-"), tag, path


@dataclass(frozen=True, init=False)
class OpenClipSpec(ModelSpec):
    """A parsed `openclip:` spec: NAME (`ARCH/PRETRAINED` or `ARCH@PATH`) and its options.

    A `ModelSpec` of backend `openclip` (same typed views, `format_text`, `to_string`, options
    checked against `OpenClipEncoder.options`) whose NAME is checked and read by this backend's
    own rules; `as_openclip_spec` turns a `ModelSpec` into one."""

    def __init__(
        self, name: str, options: dict[str, str] | None = None, alias: str | None = None
    ) -> None:
        object.__setattr__(self, "backend", BACKEND)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "options", dict(options or {}))
        object.__setattr__(self, "alias", alias)
        self.__post_init__()

    def __post_init__(self) -> None:
        _split_name(self.name)
        super().__post_init__()

    @property
    def arch(self) -> str:
        """The open_clip arch name (a custom config file's registered name, `custom_arch`)."""
        arch = _split_name(self.name)[0]
        return custom_arch(Path(arch).expanduser())[0] if _is_config_file(arch) else arch

    @property
    def config_file(self) -> Path | None:
        """The model config file of a custom architecture (None: a registered arch)."""
        arch = _split_name(self.name)[0]
        return Path(arch).expanduser() if _is_config_file(arch) else None

    @property
    def pretrained(self) -> str | None:
        return _split_name(self.name)[1]

    @property
    def checkpoint(self) -> str | None:
        return _split_name(self.name)[2]

    @property
    def quick_gelu(self) -> bool | None:
        return self.get("quick_gelu")


def parse_openclip_spec(s: str) -> OpenClipSpec:
    """Parse `openclip:NAME[?key=value&...]` (the query read as in `spec.py`)."""
    text = s.strip() if isinstance(s, str) else ""
    head, _, query = text.partition("?")
    backend, sep, name = head.partition(":")
    if not sep or backend.strip().lower() != BACKEND:
        raise ModelError(f"{s!r} is not an {BACKEND}: spec; {SYNTAX}")
    return OpenClipSpec(name.strip(), parse_query(query, s))


def as_openclip_spec(spec: Any) -> OpenClipSpec:
    """A spec string, an `OpenClipSpec`, or a `ModelSpec` whose backend is `openclip`."""
    if isinstance(spec, OpenClipSpec):
        return spec
    if isinstance(spec, str):
        return parse_openclip_spec(spec)
    if getattr(spec, "backend", None) == BACKEND:
        return OpenClipSpec(spec.name, dict(spec.options), alias=getattr(spec, "alias", None))
    shown = spec.to_string() if hasattr(spec, "to_string") else repr(spec)
    raise ModelError(f"{shown!r} is not an {BACKEND}: spec")

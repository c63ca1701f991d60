"""What building an `openclip:` encoder reads from open_clip's registry, remembered on disk.

Building an encoder reads the arch's config (context length, activation, image size), the
pretrained tag's registry entry and open_clip's default preprocessing: no weights, but importing
open_clip imports torch and torchvision (several seconds), which a rerun served entirely from the
embedding cache should not pay. So the facts read from the registry are written to
`<cache>/models/openclip/<key>.json` whenever they are read from open_clip, and a process that
has not imported open_clip reads them from there instead.

The key is the installed open_clip version (read from its package metadata, no import), the
arch and the tag. A memo is ignored when open_clip ships a config file for the arch that differs
from the config the memo recorded (an edited install, or an arch registered with
`add_model_config` under a built-in name). A process that has imported open_clip always reads
the registry itself (it may have registered archs of its own) and refreshes the memo. The memo
only spares the import: everything built from the facts (the quick_gelu policy and its warnings,
the fingerprint) is computed from them as from the registry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import lexsem.paths as paths
from lexsem.atomic import atomic_open
from lexsem.errors import DataError
from lexsem.jsonl import read_json

MEMO_VERSION = 2
DISTRIBUTION = "open_clip_torch"


@dataclass(frozen=True)
class OpenClipFacts:
    """The registry facts of one arch (and tag). `config` is the arch's open_clip config;
    `entry` the tag's registry entry ({} for a local checkpoint); `image_config` the eval
    preprocessing config (open_clip's defaults, the arch's image size, the tag's overrides);
    `registered_arch` the arch the registry lists the tag under (`arch`, or its plain name for
    an ARCH-quickgelu name) and `registered_quick_gelu` whether that builds QuickGELU (None: a
    local checkpoint); `variants` the arch names with this config otherwise that build each
    activation, by activation name (`QuickGELU`, `GELU`; the registered ones only)."""

    version: str
    arch: str
    tag: str | None
    config: dict[str, Any]
    image_config: dict[str, Any]
    registry_knows_activations: bool
    entry: dict[str, Any] = field(default_factory=dict)
    registered_arch: str | None = None
    registered_quick_gelu: bool | None = None
    variants: dict[str, str] = field(default_factory=dict)

    @property
    def context_length(self) -> int:
        return int(self.config.get("text_cfg", {}).get("context_length", 77))

    @property
    def arch_quick_gelu(self) -> bool:
        return bool(self.config.get("quick_gelu", False))


def installed_version() -> str | None:
    """open_clip's installed version, from its package metadata (does not import it)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def memo_path(version: str, arch: str, tag: str | None) -> Path:
    raw = json.dumps([MEMO_VERSION, version, arch, tag]).encode()
    key = hashlib.sha256(raw).hexdigest()[:32]
    return paths.cache_dir() / "models" / "openclip" / f"{key}.json"


def _builtin_config(arch: str) -> dict[str, Any] | None:
    """The config file open_clip ships for `arch`, read without importing open_clip."""
    try:
        spec = importlib.util.find_spec("open_clip")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "model_configs" / f"{arch}.json"
        if path.is_file():
            try:
                return read_json(path)
            except DataError:
                return None
    return None


def read_memo(arch: str, tag: str | None) -> OpenClipFacts | None:
    """The remembered facts for (installed open_clip, arch, tag), or None."""
    version = installed_version()
    if version is None:
        return None
    try:
        facts = OpenClipFacts(**read_json(memo_path(version, arch, tag)))
    except (DataError, ValueError, TypeError):
        return None
    if (facts.version, facts.arch, facts.tag) != (version, arch, tag):
        return None
    shipped = _builtin_config(arch)
    if shipped is not None and shipped != facts.config:
        return None
    return facts


def write_memo(facts: OpenClipFacts) -> None:
    """Remember `facts` (best effort: a read-only or full cache folder is not an error)."""
    if facts.version != installed_version():
        return  # an open_clip other than the installed one (a test double): nothing to key on
    path = memo_path(facts.version, facts.arch, facts.tag)
    data = json.dumps(asdict(facts), sort_keys=True, default=_jsonable)
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == data:
            return
        with atomic_open(path, "w", encoding="utf-8") as fh:
            fh.write(data)
    except OSError:
        pass


def normalized(facts: OpenClipFacts) -> OpenClipFacts:
    """`facts` as a memo holds them (tuples as lists): the same whether read or remembered."""
    return OpenClipFacts(**json.loads(json.dumps(asdict(facts), default=_jsonable)))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, set)):
        return list(value)
    return str(value)

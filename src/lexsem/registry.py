"""One generic registry: a name -> an object, registered eagerly or as a lazy "module:attr".

Benchmarks, model backends and tasks each have one `Registry`. A lazy entry names where the
object lives (`"lexsem.benchmarks.scpp:BENCHMARK"`); the module is imported only when the entry
is first looked up, so `lexsem list` and a warm rerun stay light. Built-in entries are declared
up front (not by importing modules for their side effects), so registering a user's entry never
hides a built-in one, whatever the order.

Plugins (`lexsem.plugins`: installed entry points, `LEXSEM_PLUGINS`) are loaded at the first
lookup of any registry; an entry a plugin registers is recorded as that plugin's (`origin`),
and a plugin's entry under a name already taken is refused, the error naming both.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from lexsem import plugins
from lexsem.errors import LexsemError

T = TypeVar("T")


def import_object(target: str) -> object:
    """`"package.module:attr"` -> the object."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"a lazy registry entry is 'module:attr', got {target!r}")
    obj: object = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def did_you_mean(name: str, known: list[str]) -> str:
    """' (did you mean X?)' when a known name is close to `name`, else ''."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def instance_of(cls: type[T], what: str) -> Callable[[object], T]:
    """The check of a registry whose entries are `cls` instances."""

    def check(obj: object) -> T:
        if not isinstance(obj, cls):
            raise TypeError(f"a {what} registry entry must be a {cls.__name__}, got "
                            f"{type(obj).__name__}")  # fmt: skip
        return obj

    return check


class Registry(Generic[T]):
    """Named entries of one kind (`what`, used in error messages), eager or lazy."""

    def __init__(
        self,
        what: str,
        check: type[T] | Callable[[object], T] | None = None,
        entries: Mapping[str, T | str] | None = None,
    ) -> None:
        """`check`: a type every entry must be an instance of, or a function that returns the
        entry checked (raising `TypeError`); `entries`: the built-in entries, declared up front
        (objects, or lazy "module:attr" strings)."""
        self.what = what
        self._check = instance_of(check, what) if isinstance(check, type) else check
        self._entries: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}
        self._origins: dict[str, plugins.Plugin] = {}
        for name, entry in (entries or {}).items():
            self.add(name, entry)

    def add(self, name: str, entry: T | str, *, replace: bool = False) -> None:
        """Register `entry` (an object, or a lazy "module:attr" string) under `name`."""
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.what} name must be a non-empty string, got {name!r}")
        plugin = plugins.owner()
        if name in self._entries:
            had = self._origins.get(name)
            if plugin is not None and had is not plugin:
                first = had.describe() if had is not None else "lexsem (built in)"
                raise LexsemError(
                    f"{self.what} {name!r} of {plugin.describe()} is refused: the name is "
                    f"already taken by {first}"
                )
            if not replace:
                raise LexsemError(
                    f"{self.what} {name!r} is already registered"
                    + (f" (by {had.describe()})" if had is not None else "")
                )
        self._entries[name] = entry
        self._loaded.pop(name, None)
        if plugin is not None:
            self._origins[name] = plugin
            plugin.added.append((self, name))
        else:
            self._origins.pop(name, None)

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)
        self._loaded.pop(name, None)
        self._origins.pop(name, None)

    def origin(self, name: str) -> plugins.Plugin | None:
        """The plugin that registered `name`, or None (lexsem's own entries, the program's)."""
        return self._origins.get(name) if name in self._entries else None

    def plugin_note(self, name: str) -> str:
        """' (plugin: NAME)' for a plugin's entry, else ''."""
        origin = self.origin(name)
        return f" (plugin: {origin.name})" if origin is not None else ""

    def entries(self) -> dict[str, T | str]:
        """The entries as registered, lazy ones as their "module:attr" (a copy)."""
        plugins.ensure_loaded()
        return dict(self._entries)

    def names(self) -> list[str]:
        plugins.ensure_loaded()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        plugins.ensure_loaded()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        plugins.ensure_loaded()
        return len(self._entries)

    def get(self, name: str) -> T:
        """The entry (importing a lazy one on first use); a LexsemError naming the known ones."""
        plugins.ensure_loaded()
        try:
            entry = self._entries[name]
        except KeyError:
            known = self.names()
            raise LexsemError(
                f"unknown {self.what} {name!r}{did_you_mean(name, known)}; known: "
                f"{', '.join(known)}"
            ) from None
        if not isinstance(entry, str):
            return self._check(entry) if self._check is not None else entry
        if name not in self._loaded:
            obj = import_object(entry)
            self._loaded[name] = self._check(obj) if self._check is not None else obj  # type: ignore[assignment]
        return self._loaded[name]

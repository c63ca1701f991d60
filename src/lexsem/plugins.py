"""Plugins: the user's modules that register entries (backends, benchmarks, tasks, stages,
study kinds, executors, paper tables, ...) through the public `register_*` functions and the
registries' `add`, loaded once per process by the registry layer itself.

Where plugins come from, in the order they are loaded:

- installed packages: every entry point of the group `lexsem.plugins` (its value a module,
  or a `module:callable` called with no arguments); loaded at the first registry lookup of a
  process, so `lexsem.evaluate(...)`, the CLI and every worker process see them;
- `LEXSEM_PLUGINS`: module names or paths of `.py` files, separated by `os.pathsep` or commas;
  loaded with the entry points (child processes inherit it);
- `lexsem --plugin MODULE_OR_PATH` (repeatable), a grid's or a recipe's `plugins = [...]`:
  loaded when the command or the file asks for them.

An entry point that fails to load is one warning line on stderr, and the command goes on
without it; a plugin the user named (`--plugin`, `LEXSEM_PLUGINS`, a grid's or a recipe's
`plugins`) that fails is an error. Each registration made while a plugin loads is recorded as
that plugin's (`Registry.origin`); a plugin's entry whose name is already taken, by lexsem or
by another plugin, is refused with an error naming both, and the entries a failed plugin had
added are removed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from lexsem.errors import LexsemError

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV",
    "Plugin",
    "current",
    "ensure_loaded",
    "load",
    "loaded",
    "owner",
    "split_env",
]

ENTRY_POINT_GROUP = "lexsem.plugins"
ENV = "LEXSEM_PLUGINS"


class _Removable(Protocol):
    what: str

    def remove(self, name: str) -> None: ...


@dataclass
class Plugin:
    """One plugin: its name, what was imported (a module, `module:callable` or a file's path),
    where it came from (`entry point of DIST VERSION`, `--plugin`, `LEXSEM_PLUGINS`, a grid or
    a recipe), what it added (registry kind -> names) and, where it failed, why."""

    name: str
    target: str
    source: str
    explicit: bool
    added: list[tuple[_Removable, str]] = field(default_factory=list)
    error: str | None = None

    @property
    def adds(self) -> dict[str, list[str]]:
        """What it registered: registry kind (`model backend`, `benchmark`, ...) -> names."""
        out: dict[str, list[str]] = {}
        for registry, name in self.added:
            out.setdefault(registry.what, []).append(name)
        return out

    def describe(self) -> str:
        return f"plugin {self.name!r} ({self.source})"


_lock = threading.RLock()
_plugins: dict[str, Plugin] = {}
_stack: list[Plugin] = []
_started = False


def current() -> Plugin | None:
    """The plugin being loaded now (its registrations are its own), or None."""
    return _stack[-1] if _stack else None


def loaded() -> list[Plugin]:
    """Every plugin this process tried to load, in order (failed ones with their `error`)."""
    return list(_plugins.values())


def split_env(value: str | None) -> list[str]:
    """`LEXSEM_PLUGINS`' values: separated by `os.pathsep` or commas, blanks dropped."""
    return [v.strip() for v in re.split(rf"[,{re.escape(os.pathsep)}]", value or "") if v.strip()]


def ensure_loaded() -> None:
    """Load the installed entry points and `LEXSEM_PLUGINS`, once per process (a call made
    while they load, by a plugin asking a registry, returns at once)."""
    global _started
    if _started:
        return
    with _lock:
        if _started:
            return
        _started = True
        for ep in _entry_points():
            dist = getattr(ep, "dist", None)
            where = f"entry point of {dist.name} {dist.version}" if dist else "entry point"
            _load_one(ep.value, ep.name, where, explicit=False, entry=ep)
        load(split_env(os.environ.get(ENV)), ENV)


def _entry_points() -> list[EntryPoint]:
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: (ep.name, ep.value))


def load(values: Iterable[str], source: str) -> None:
    """Load the plugins the user named (module names, `module:callable`, or paths of `.py`
    files) from `source` (`--plugin`, `LEXSEM_PLUGINS`, `grid FILE`, ...); one that cannot be
    loaded is a `LexsemError` naming it and its error. One loaded already is not loaded again
    (unless its module was removed from `sys.modules`)."""
    ensure_loaded()
    for value in values:
        _load_one(value, value, source, explicit=True)


def _is_path(value: str) -> bool:
    return value.endswith(".py") or os.sep in value or (os.altsep or os.sep) in value


def _key(value: str) -> str:
    return str(Path(value).resolve()) if _is_path(value) else value


def _still_loaded(plugin: Plugin) -> bool:
    if plugin.error is not None:
        return True  # tried once: not again
    module = plugin.target.partition(":")[0]
    if _is_path(plugin.target):
        module = Path(plugin.target).stem
    return module in sys.modules


def _load_one(
    value: str, name: str, source: str, *, explicit: bool, entry: EntryPoint | None = None
) -> None:
    with _lock:
        key = _key(value)
        known = _plugins.get(key)
        if known is not None and _still_loaded(known):
            if known.error is not None and explicit:
                raise LexsemError(f"{known.describe()} cannot be loaded: {known.error}")
            return
        plugin = Plugin(name, key if _is_path(value) else value, source, explicit)
        _plugins[key] = plugin
        try:
            with _loading(plugin):
                _import(plugin, entry)
        except Exception as exc:
            for registry, added in plugin.added:
                registry.remove(added)
            plugin.added.clear()
            plugin.error = " ".join(f"{type(exc).__name__}: {exc}".split())
            if explicit:
                raise LexsemError(f"{plugin.describe()} cannot be loaded: {plugin.error}") from None
            sys.stderr.write(
                f"warning: {plugin.describe()} not loaded, going on without it: {plugin.error}\n"
            )


@contextmanager
def _loading(plugin: Plugin) -> Iterator[None]:
    _stack.append(plugin)
    try:
        yield
    finally:
        _stack.pop()


def _import(plugin: Plugin, entry: EntryPoint | None) -> None:
    if entry is not None:
        obj = entry.load()
        if not isinstance(obj, ModuleType) and callable(obj):
            obj()
        return
    target = plugin.target
    if _is_path(target):
        _import_path(Path(target))
        return
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    if attr:
        for part in attr.split("."):
            obj = getattr(obj, part)
        obj()


def _import_path(path: Path) -> None:
    """Import the file at `path` as the module named by its stem (its folder joins `sys.path`,
    so its siblings and lazy `"stem:attr"` entries import too)."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(path.stem, None)
        raise


def owner() -> Plugin | None:
    """Called by `Registry.add`: the plugin registering an entry now, or None where the
    registration is not a plugin's (lexsem's own built-in entries, declared by its modules as
    they are first imported, are never a plugin's, even while a plugin imports them)."""
    plugin = current()
    if plugin is None or _declared_by_lexsem():
        return None
    return plugin


def _declared_by_lexsem() -> bool:
    """Whether the registration under way is a module-level statement of a lexsem module (a
    built-in entry): the first frame outside lexsem's functions is a lexsem module's body."""
    frame = sys._getframe(3)  # this <- owner <- Registry.add <- the caller of add
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if not (module == "lexsem" or module.startswith("lexsem.")):
            return False
        if frame.f_code.co_name == "<module>":
            return True
        frame = frame.f_back
    return False

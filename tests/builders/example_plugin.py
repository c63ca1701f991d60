"""The example plugin package (examples/lexsem-example-plugin) in this process, one module at a
time: its modules importable under their own names without its `__init__.py` (which registers
every entry at once), and the registry lines of that `__init__.py`, to run one by one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "lexsem-example-plugin"
NAME = "lexsem_example_plugin"
SOURCE = PACKAGE / "src" / NAME
INIT = SOURCE / "__init__.py"


def registry_line(start: str) -> str:
    """The one line of the package's `__init__.py` that starts with `start`."""
    (line,) = [x for x in INIT.read_text().splitlines() if x.startswith(start)]
    return line


@contextmanager
def package_modules() -> Iterator[None]:
    """`lexsem_example_plugin.MODULE` importable (a package of the plugin's folder whose
    `__init__.py` is not run); every `lexsem_example_plugin` module put back as it was after."""
    before = {k: v for k, v in sys.modules.items() if k == NAME or k.startswith(f"{NAME}.")}
    for name in before:
        del sys.modules[name]
    bare = ModuleType(NAME)
    bare.__path__ = [str(SOURCE)]
    sys.modules[NAME] = bare
    try:
        yield
    finally:
        for name in [k for k in sys.modules if k == NAME or k.startswith(f"{NAME}.")]:
            del sys.modules[name]
        sys.modules.update(before)

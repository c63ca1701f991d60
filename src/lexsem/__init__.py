"""lexsem: do vision-language and text embedding models understand meaning or only words?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lexsem._version import __version__

if TYPE_CHECKING:
    from lexsem.api import evaluate
    from lexsem.results.run import Run

__all__ = ["Run", "__version__", "evaluate"]


def __getattr__(name: str) -> Any:  # lazy: `import lexsem` stays light
    if name == "evaluate":
        from lexsem.api import evaluate

        return evaluate
    if name == "Run":
        from lexsem.results.run import Run

        return Run
    raise AttributeError(name)

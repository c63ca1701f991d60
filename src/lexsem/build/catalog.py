"""The modules that register lexsem's built-in stages (and input sources) when imported:
`load_stages` imports them before a recipe is checked."""

from __future__ import annotations

import importlib

__all__ = ["STAGE_MODULES", "load_stages"]

STAGE_MODULES = (
    "lexsem.build.caption_format",
    "lexsem.build.freeze",
    "lexsem.build.human",
    "lexsem.build.images",
    "lexsem.build.refine",
    "lexsem.build.scpp_positive",
    "lexsem.build.vsr_spatial",
)


def load_stages(extra: tuple[str, ...] = ()) -> None:
    """Import the built-in stage modules and `extra` (a recipe's `imports`)."""
    for name in (*STAGE_MODULES, *extra):
        importlib.import_module(name)

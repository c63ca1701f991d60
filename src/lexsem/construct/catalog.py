"""The modules that register lexsem's built-in stages (and input sources) when imported:
`load_stages` imports them before a recipe is checked."""

from __future__ import annotations

import importlib

__all__ = ["STAGE_MODULES", "load_stages"]

STAGE_MODULES = (
    "lexsem.build.baselines",
    "lexsem.build.best_image",
    "lexsem.build.blind_scores",
    "lexsem.build.caption_format",
    "lexsem.build.clean_captions",
    "lexsem.build.coco_captions",
    "lexsem.build.freeze",
    "lexsem.build.human",
    "lexsem.build.images",
    "lexsem.build.refine",
    "lexsem.build.score_percentile",
    "lexsem.build.scpp_positive",
    "lexsem.build.sugarcrepe_negatives",
    "lexsem.build.template_filter",
    "lexsem.build.train_manifest",
    "lexsem.build.vsr_spatial",
    "lexsem.annotate.fold_back",  # a validation study's answers folded into the rows
)


def load_stages(extra: tuple[str, ...] = ()) -> None:
    """Import the built-in stage modules and `extra` (a recipe's `imports`)."""
    for name in (*STAGE_MODULES, *extra):
        importlib.import_module(name)

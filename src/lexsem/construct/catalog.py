"""The modules that register lexsem's built-in stages (and input sources) when imported:
`load_stages` imports them before a recipe is checked."""

from __future__ import annotations

import importlib

__all__ = ["STAGE_MODULES", "load_stages"]

STAGE_MODULES = (
    "lexsem.construct.baselines",
    "lexsem.construct.best_image",
    "lexsem.construct.blind_scores",
    "lexsem.construct.caption_format",
    "lexsem.construct.clean_captions",
    "lexsem.construct.coco_captions",
    "lexsem.construct.freeze",
    "lexsem.construct.human",
    "lexsem.construct.images",
    "lexsem.construct.refine",
    "lexsem.construct.score_percentile",
    "lexsem.construct.scpp_positive",
    "lexsem.construct.sugarcrepe_negatives",
    "lexsem.construct.template_filter",
    "lexsem.construct.train_manifest",
    "lexsem.construct.vsr_spatial",
    "lexsem.annotate.fold_back",  # a validation study's answers folded into the rows
)


def load_stages(extra: tuple[str, ...] = ()) -> None:
    """Import the built-in stage modules and `extra` (a recipe's `plugins`)."""
    for name in (*STAGE_MODULES, *extra):
        importlib.import_module(name)

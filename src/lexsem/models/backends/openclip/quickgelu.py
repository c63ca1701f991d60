"""QuickGELU: which activation open_clip weights run with.

OpenAI's CLIP weights (and open_clip's `yfcc15m`, `cc12m`, some `laion400m_*` and MetaCLIP
tags) were trained with QuickGELU; the plain arch configs (`ViT-B-32`) build nn.GELU and the
`-quickgelu` ones (`ViT-B-32-quickgelu`) QuickGELU. Loading such weights under the other
activation runs without an error but degrades every embedding. open_clip's registry records
what each tag was trained with (`quick_gelu`, open_clip >= 2.29); lexsem compares it with the
arch's config when the encoder is built (no weights needed) and

- raises ModelError naming the right arch when they differ and the spec gives no `quick_gelu`;
- with an explicit `quick_gelu=...` runs that activation (overriding the arch's), warning
  (`QuickGeluWarning`) when it differs from the tag's training — the way to reproduce an
  evaluation that had the bug;
- for a local checkpoint (provenance unknown) uses `quick_gelu` when given, else the arch's own
  activation with a `QuickGeluWarning`.
"""

from __future__ import annotations

import warnings

from lexsem.errors import ModelError

QUICKGELU_SUFFIX = "-quickgelu"


class QuickGeluWarning(UserWarning):
    """Weights run with an activation other than the one they were trained with, or one that
    lexsem cannot check (a local checkpoint without `quick_gelu=...`)."""


def activation_name(quick_gelu: bool) -> str:
    return "QuickGELU" if quick_gelu else "GELU"


def resolve_quick_gelu(
    *,
    label: str,
    arch: str,
    arch_quick_gelu: bool,
    trained_quick_gelu: bool | None,
    option: bool | None,
    right_arch: str | None = None,
    tag: str | None = None,
) -> bool:
    """The activation to run (True = QuickGELU), per the policy in the module doc.

    trained_quick_gelu: what the weights were trained with (None: unknown, a local checkpoint).
    option: the spec's `quick_gelu` (None: not given). Raises ModelError on an unrequested
    mismatch; warns (QuickGeluWarning) on a requested one or an unknown provenance."""
    if option is None:
        if trained_quick_gelu is None:
            warnings.warn(
                f"{label}: the checkpoint's activation is unknown; running {arch}'s "
                f"{activation_name(arch_quick_gelu)}. If the weights were trained with QuickGELU "
                f"(OpenAI CLIP and models fine-tuned from it, open_clip's yfcc15m/cc12m and some "
                f"laion400m/MetaCLIP weights) add quick_gelu=true, otherwise quick_gelu=false "
                f"to say so (and silence this warning)",
                QuickGeluWarning,
                stacklevel=3,
            )
            return arch_quick_gelu
        if trained_quick_gelu == arch_quick_gelu:
            return arch_quick_gelu
        trained, built = activation_name(trained_quick_gelu), activation_name(arch_quick_gelu)
        fix = (
            f"use openclip:{right_arch}/{tag}"
            if right_arch and tag
            else f"add quick_gelu={str(trained_quick_gelu).lower()}"
        )
        raise ModelError(
            f"{label}: the {tag!r} weights were trained with {trained} but arch {arch} builds "
            f"{built}; they would load without an error and give degraded embeddings. To fix: "
            f"{fix}. To reproduce an evaluation that ran them with {built} on purpose, add "
            f"quick_gelu={str(arch_quick_gelu).lower()}"
        )
    if trained_quick_gelu is not None and option != trained_quick_gelu:
        warnings.warn(
            f"{label}: running weights trained with {activation_name(trained_quick_gelu)} with "
            f"{activation_name(option)} (quick_gelu={str(option).lower()} asks for it); their "
            f"embeddings are degraded",
            QuickGeluWarning,
            stacklevel=3,
        )
    return option

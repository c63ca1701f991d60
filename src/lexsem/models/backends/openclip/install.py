"""Importing open_clip, or saying how to install it: open_clip (and with it torchvision) is
imported only inside functions, so lexsem works without it; building an `openclip:` encoder
without it raises ModelError saying `pip install "lexsem[openclip]"`, and a torchvision built
for another torch is named as such."""

from __future__ import annotations

from typing import Any

from lexsem.errors import ModelError

BACKEND = "openclip"
INSTALL_HINT = 'pip install "lexsem[openclip]"'
MIN_OPEN_CLIP = "2.29"  # the first release whose pretrained registry records `quick_gelu`


def import_open_clip() -> Any:
    """The `open_clip` module, or ModelError saying how to install it / why it does not load."""
    try:
        import open_clip
    except ImportError as exc:
        raise ModelError(
            f"the {BACKEND}: backend needs open_clip, which is not installed: run "
            f"`{INSTALL_HINT}` (open_clip_torch>={MIN_OPEN_CLIP} and a torchvision matching "
            f"your torch). ({exc.__class__.__name__}: {exc})"
        ) from exc
    except RuntimeError as exc:
        if "torchvision::" not in str(exc):
            raise
        raise ModelError(_torchvision_mismatch(exc)) from exc
    return open_clip


def _torchvision_mismatch(exc: Exception) -> str:
    try:
        import torch

        have = f"torch {torch.__version__} (CUDA: {torch.version.cuda or 'none, a CPU build'})"
    except Exception:  # pragma: no cover - torch itself broken
        have = "your torch"
    try:
        from importlib.metadata import version

        tv = f"torchvision {version('torchvision')}"
    except Exception:  # pragma: no cover
        tv = "torchvision"
    return (
        f"open_clip cannot be imported: {tv} does not match {have} — its compiled operators "
        f"did not load ({exc}). Install the torchvision build made for this torch (same "
        f"version pair and the same CPU/CUDA variant, from the same index), e.g. "
        f'pip install "torch==X" "torchvision==Y" from one index.'
    )

"""The optimizer and schedule of CLIP fine-tuning, as open_clip's training code sets them and
BiVLC (App. E) uses them: AdamW with two parameter groups (no weight decay on gains, biases,
embeddings' scales and the logit scale: every parameter with fewer than two dimensions, and
any whose name says `logit_scale`) and a cosine schedule after a linear warm-up.

`clamp_logit_scale` keeps the logit scale in [0, ln 100] (a temperature of at most 100), as
open_clip's training loop and NegCLIP's copy of it do after every step ("we clamp to 4.6052 =
ln(100), as in the original paper", NegCLIP's src/training/train.py). BiVLC's fine-tuning
script (src/CLIP_fine_tuning/CLIP_fine_tuning.py) does not clamp it: the training loop applies
the clamp only where `TrainConfig.clamp_logit_scale` says so."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = ["adamw", "clamp_logit_scale", "cosine_with_warmup", "param_groups"]

MAX_LOGIT_SCALE = math.log(100.0)


def _no_decay(name: str, param: Any) -> bool:
    return param.ndim < 2 or "logit_scale" in name or name.endswith(".bias")


def param_groups(named: Iterable[tuple[str, Any]], weight_decay: float) -> list[dict[str, Any]]:
    """Two AdamW groups of the trainable parameters: with and without weight decay."""
    decay, plain = [], []
    for name, p in named:
        if p.requires_grad:
            (plain if _no_decay(name, p) else decay).append(p)
    groups = [{"params": plain, "weight_decay": 0.0}]
    if decay:
        groups.insert(0, {"params": decay, "weight_decay": weight_decay})
    return [g for g in groups if g["params"]]


def adamw(model: Any, *, lr: float, weight_decay: float, betas: tuple[float, float],
          eps: float) -> Any:  # fmt: skip
    """AdamW over `model`'s trainable parameters (the two groups of `param_groups`)."""
    import torch

    groups = param_groups(model.named_parameters(), weight_decay)
    if not groups:
        raise ValueError("no parameter of the model is trainable")
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)


def cosine_with_warmup(optimizer: Any, warmup: int, total: int) -> Any:
    """A LambdaLR: the rate rises linearly over `warmup` steps, then follows a cosine to 0 at
    `total` (open_clip's `cosine_lr`)."""
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        span = max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / span)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def clamp_logit_scale(model: Any) -> None:
    """Keep every `logit_scale` parameter within [0, ln 100] (in place, no gradient)."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("logit_scale"):
                p.clamp_(0.0, MAX_LOGIT_SCALE)

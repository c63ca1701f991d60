"""Model selection on in-batch accuracy over a validation split, as BiVLC's fine-tuning script
does (BiVLC, App. E: "we used validation accuracy as the model selection criterion"; its
src/CLIP_fine_tuning/CLIP_fine_tuning.py):

- the validation split: COCO's caption rows divided with `datasets`' ``train_test_split(
  test_size=0.2, seed=seed)`` (`held_out_split` draws the same rows: a permutation of
  ``np.random.default_rng(seed)``, its first ``ceil(0.2 n)`` rows held out, in that order);
  TROHN-Text and TROHN-Img: the datasets' own validation split (a manifest's ``dev`` rows);
- its batches: the training batch size, in order, no shuffling, the last batch incomplete;
- the metric of a batch (`in_batch_accuracy`): ½ (image→text accuracy + text→image accuracy),
  each the share of rows whose largest logit is at their own column, over the regime's batch
  layout (TROHN-Text: B images against B captions and their B negatives; text→image over the
  B positive captions; TROHN-Img: the 2B × 2B batch of positive and negative pairs);
- the epoch's accuracy: the mean over batches (each batch counts once, the short last one
  too); the epoch kept is the first with the highest.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["held_out_split", "in_batch_accuracy"]


def held_out_split(n: int, fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(training rows, held-out rows) of `n` rows, as ``train_test_split(test_size=fraction,
    seed=seed)`` of Hugging Face `datasets` divides them: a permutation of
    ``np.random.default_rng(seed)``, the first ``ceil(fraction · n)`` held out; both in the
    permutation's order."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"the held-out fraction must be in (0, 1): {fraction}")
    n_test = math.ceil(fraction * n)
    if n_test >= n:
        raise ValueError(f"holding out {fraction} of {n} rows leaves no training row")
    order = np.random.default_rng(seed).permutation(n)
    return order[n_test:].tolist(), order[:n_test].tolist()


def in_batch_accuracy(images: Any, texts: Any) -> float:
    """½ (image→text + text→image) accuracy of one batch: B image embeddings against texts
    whose first B are their positives (the rest extra negative columns of image→text); a row
    is right when its largest similarity is at its own column (the first, on a tie: torch's
    argmax)."""
    import torch

    b = images.shape[0]
    target = torch.arange(b, device=images.device)
    per_image = images @ texts.T
    per_text = texts[:b] @ images.T
    i2t = (per_image.argmax(dim=1) == target).float().mean()
    t2i = (per_text.argmax(dim=1) == target).float().mean()
    return float((i2t + t2i) / 2)

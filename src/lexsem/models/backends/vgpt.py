"""`vgpt:` backend: VGPTScore of a generative VLM, log P(caption | image), as a pair scorer
("Revisiting the Role of Language Priors in Vision-Language Models"; SugarCrepe++ App. G.2,
Table 19).

Spec: `vgpt:NAME?score=sum|mean|blind|debiased&prompt=...&alpha=1&noise_images=3&seed=0`.

The caption is the assistant's reply to a user turn of the image and `prompt` (default
`Describe the image.`), teacher-forced, with the primitive of the `vqa:` backend
(`VQAScorer.answer_logprobs`: prompt and caption encoded together, the prompt checked to be a
prefix).

- `sum` (default): Σ_k log P(t_k | t_<k, image);
- `mean`: the same, divided by the caption's token count;
- `blind`: the image replaced by `noise_images` Gaussian-noise images, averaged in probability
  space: log((1/K) Σ_j P(t | noise_j)). The noise is drawn in the model's input space (a
  standard normal pixel tensor of the image's shape, seeded with `seed + j`): what a
  normalised Gaussian image is, without a round trip through 8-bit pixels;
- `debiased`: log P(t | image) − `alpha` · log P(t), with P(t) the blind estimate above.

All options are in the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.models.backends.vqa import VQAScorer
from lexsem.models.options import COMMON, Option, choice, positive_int

__all__ = ["VGPTScorer", "noise_pixels"]

SCORES = ("sum", "mean", "blind", "debiased")


def noise_pixels(like: Any, k: int, seed: int) -> Any:
    """The `k` Gaussian-noise pixel tensors of `like`'s shape (one image), seeded."""
    import torch

    out = []
    for j in range(k):
        g = torch.Generator().manual_seed(seed + j)
        out.append(torch.randn(tuple(like.shape), generator=g, dtype=torch.float32))
    return torch.stack(out)


class VGPTScorer(VQAScorer):
    """A lazy `PairScorer`: VGPTScore of a transformers generative VLM (see the module doc)."""

    backend: ClassVar[str] = "vgpt"
    description = "VGPTScore, log P(caption | image), of a generative VLM: pair scorer"
    options: ClassVar[Mapping[str, Option]] = {
        **COMMON,
        "score": choice(*SCORES, default="sum"),
        "prompt": Option(str, "Describe the image."),
        "alpha": Option(float, 1.0),
        "noise_images": positive_int(3),
        "seed": Option(int, 0),
    }

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.score_mode = self.spec.get("score") or "sum"
        self.user_prompt = self.spec.get("prompt") or "Describe the image."
        alpha, k, seed = (self.spec.get(k) for k in ("alpha", "noise_images", "seed"))
        self.alpha = 1.0 if alpha is None else float(alpha)
        self.noise_images = int(k or 3)
        self.seed = int(seed or 0)

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "score": self.score_mode,
            "prompt": self.user_prompt,
            "alpha": self.alpha,
            "noise_images": self.noise_images,
            "seed": self.seed,
        }

    def caption_logprob(self, images: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(Σ log P(t_k | t_<k, image), token count) of each caption with its image."""
        turn = self.user_turn(self.user_prompt)
        lps = self.answer_logprobs(images, [turn] * len(texts), list(texts))
        return np.array([lp.sum() for lp in lps]), np.array([len(lp) for lp in lps])

    def blind_logprob(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        """log((1/K) Σ_j P(t | noise_j)) of each caption."""
        from scipy.special import logsumexp

        k = self.noise_images
        noise = noise_pixels(images[0], k, self.seed)
        rows = [t for t in texts for _ in range(k)]
        pixels = noise.repeat(len(texts), *([1] * (noise.dim() - 1)))
        sums, _ = self.caption_logprob(pixels, rows)
        return logsumexp(sums.reshape(len(texts), k), axis=1) - np.log(k)

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0,), dtype=np.float32)
        if self.score_mode == "blind":
            return self.blind_logprob(images, texts).astype(np.float32)
        sums, counts = self.caption_logprob(images, texts)
        if self.score_mode == "mean":
            return (sums / counts).astype(np.float32)
        if self.score_mode == "debiased":
            return (sums - self.alpha * self.blind_logprob(images, texts)).astype(np.float32)
        return sums.astype(np.float32)

"""`vgpt:` backend: VGPTScore of a generative VLM, log P(caption | image), as a pair scorer
("Revisiting the Role of Language Priors in Vision-Language Models"; SugarCrepe++ App. G.2,
Table 19).

Spec: `vgpt:NAME?score=sum|mean|tokens|blind|debiased|t2v&prompt=...&alpha=1&noise_images=3&seed=0`.

The caption is the assistant's reply to a user turn of the image and `prompt` (default
`Describe the image.`), teacher-forced, with the generative-VLM primitive
(`GenerativeVLM.logprobs`: prompt and caption encoded together, the prompt checked to be a
prefix; the image and the user turn computed once for all the captions of an image).

- `sum` (default): Σ_k log P(t_k | t_<k, image);
- `mean`: the same, divided by the caption's token count;
- `tokens`: that token count (so that a run of each of `sum`, `mean` and `tokens` records the
  three numbers of one computation);
- `blind`: the image replaced by `noise_images` Gaussian-noise images, averaged in probability
  space: log((1/K) Σ_j P(t | noise_j)). Noise image j (seeded with `seed + j`, the size of the
  real image, so dynamic-resolution models give it as many tokens) is a standard normal draw
  in the model's normalised input space, mapped back through the image processor's
  `image_mean` / `image_std` to 8-bit pixels (clipped to 0..255);
- `debiased`: log P(t | image) − `alpha` · log P(t), with P(t) the blind estimate above;
- `t2v`: t2v_metrics' published VGPTScore setting (its README: `question_template=""`,
  `answer_template="{}"` through the VQAScore code of the model's family,
  `lexsem.models.vlm.reference`): the family's VQAScore prompt with an empty question (LLaVA:
  the system message, `USER: <image>\n` and ` ASSISTANT:`), the caption followed by the
  tokenizer's end-of-sequence token as the answer, the family's image padding, and the mean
  log-probability over the caption's tokens *and* the end token (the reference returns its
  exp). `prompt` does not apply. Only for families whose reference recipe is teacher-forced
  (LLaVA-1.5 / 1.6, InstructBLIP-Flan-T5); another family is a `ModelError`.

All options are in the fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.options import Option, choice, positive_int
from lexsem.models.vlm.generative import VLM_OPTIONS, VLMPairScorer
from lexsem.models.vlm.reference import RECIPES_VERSION, recipe_for
from lexsem.models.vlm.reference_images import prepare_image

__all__ = ["VGPTScorer", "noise_images"]

SCORES = ("sum", "mean", "tokens", "blind", "debiased", "t2v")


def noise_images(size: tuple[int, int], k: int, seed: int, mean: Any, std: Any) -> list[Any]:
    """`k` Gaussian-noise RGB images of `size` (width, height): standard normal in the input
    space normalised by `mean` / `std` (per channel, 0..1 scale), as 8-bit pixels; seeded."""
    from PIL import Image

    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64), (3,))
    std = np.broadcast_to(np.asarray(std, dtype=np.float64), (3,))
    out = []
    for j in range(k):
        z = np.random.default_rng(seed + j).standard_normal((size[1], size[0], 3))
        pixels = np.clip(np.rint((mean + std * z) * 255.0), 0, 255).astype(np.uint8)
        out.append(Image.fromarray(pixels, "RGB"))
    return out


class VGPTScorer(VLMPairScorer):
    """A lazy `PairScorer`: VGPTScore of a transformers generative VLM (see the module doc)."""

    backend: ClassVar[str] = "vgpt"
    description = "VGPTScore, log P(caption | image), of a generative VLM: pair scorer"
    options: ClassVar[Mapping[str, Option]] = {
        **VLM_OPTIONS,
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
        out = {
            **self._vlm_fingerprint(),
            "score": self.score_mode,
            "prompt": self.user_prompt,
            "alpha": self.alpha,
            "noise_images": self.noise_images,
            "seed": self.seed,
        }
        if self.score_mode == "t2v":
            out["prompt"] = None  # the family's recipe's
            out["recipes"] = RECIPES_VERSION
        return out

    def t2v_logprob(self, image: Any, texts: Sequence[str]) -> np.ndarray:
        """The reference's VGPTScore setting: mean log P(caption tokens and end token) after
        the family's VQAScore prompt with an empty question (see the module doc)."""
        layout = self.layout
        recipe = recipe_for(layout.model_type, layout.kind)
        if recipe is None or recipe.read != "mean" or recipe.prompt is None:
            raise ModelError(
                f"{self.name}: score=t2v needs the VQAScore reference's teacher-forced recipe, "
                f"which the family {layout.model_type!r} ({layout.kind}) does not have"
            )
        image = prepare_image(recipe.image, image, self._processor)
        prompt = recipe.prompt.replace("{text}", "")
        end = self._processor.tokenizer.eos_token if recipe.end else ""
        lps = self.logprobs(image, [(prompt, t + end) for t in texts])
        return np.array([lp.mean() for lp in lps])

    def caption_logprob(self, image: Any, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(Σ log P(t_k | t_<k, image), token count) of each caption with one image."""
        turn = self.user_turn(self.user_prompt)
        lps = self.logprobs(image, [(turn, t) for t in texts])
        return np.array([lp.sum() for lp in lps]), np.array([len(lp) for lp in lps])

    def noise_for(self, image: Any) -> list[Any]:
        """The blind variant's noise images for an image of `image`'s size."""
        self._ensure_loaded()
        proc = getattr(self._processor, "image_processor", None)
        mean = getattr(proc, "image_mean", None) or [0.5, 0.5, 0.5]
        std = getattr(proc, "image_std", None) or [0.5, 0.5, 0.5]
        return noise_images(image.size, self.noise_images, self.seed, mean, std)

    def blind_logprob(self, image: Any, texts: Sequence[str]) -> np.ndarray:
        """log((1/K) Σ_j P(t | noise_j)) of each caption."""
        from scipy.special import logsumexp

        sums = np.stack([self.caption_logprob(noise, texts)[0] for noise in self.noise_for(image)])
        return logsumexp(sums, axis=0) - np.log(self.noise_images)

    def _scores(self, image: Any, texts: list[str]) -> np.ndarray:
        if self.score_mode == "t2v":
            return self.t2v_logprob(image, texts)
        if self.score_mode == "blind":
            return self.blind_logprob(image, texts)
        sums, counts = self.caption_logprob(image, texts)
        if self.score_mode == "mean":
            return sums / counts
        if self.score_mode == "tokens":
            return counts.astype(np.float64)
        if self.score_mode == "debiased":
            return sums - self.alpha * self.blind_logprob(image, texts)
        return sums

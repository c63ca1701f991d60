"""`vgpt:` backend: VGPTScore of a generative VLM, log P(caption | image), as a pair scorer
("Revisiting the Role of Language Priors in Vision-Language Models"; SugarCrepe++ App. G.2,
Table 19).

Spec: `vgpt:NAME?score=sum|mean|tokens|blind|debiased|t2v&prompt=...&alpha=1&noise_images=3
&seed=0&noise=input|pixels`.

The caption is the assistant's reply to a user turn of the image and `prompt` (default
`Describe the image.`), teacher-forced, with the generative-VLM primitive
(`GenerativeVLM.logprobs`: prompt and caption encoded together, the prompt checked to be a
prefix; the image and the user turn computed once for all the captions of an image).

- `sum` (default): Σ_k log P(t_k | t_<k, image);
- `mean`: the same, divided by the caption's token count;
- `tokens`: that token count (so that a run of each of `sum`, `mean` and `tokens` records the
  three numbers of one computation);
- `blind`: the image replaced by `noise_images` Gaussian-noise images, averaged in probability
  space: log((1/K) Σ_j P(t | noise_j)). Noise image j is seeded with `seed + j`. `noise=input`
  (default): the processor makes the model's inputs from the real image (so dynamic-resolution
  models give the noise as many tokens), then its `pixel_values` are replaced by a standard
  normal draw of their shape — mean 0, standard deviation 1, uncorrelated, in the model's
  input space (`lexsem.models.vlm.noise.input_noise`). `noise=pixels`: an 8-bit image of the
  real image's size, standard normal in the normalised space mapped back through the image
  processor's `image_mean` / `image_std`, which the processor then resizes (smoothed: see
  docs/fidelity.md, "Blind VGPTScore noise");
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
from lexsem.models.vlm.noise import NOISE_KINDS, input_noise, pixel_noise_images
from lexsem.models.vlm.reference import RECIPES_VERSION, recipe_for
from lexsem.models.vlm.reference_images import prepare_image

__all__ = ["VGPTScorer"]

SCORES = ("sum", "mean", "tokens", "blind", "debiased", "t2v")


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
        "noise": choice(*NOISE_KINDS, default="input"),
    }

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.score_mode = self.spec.get("score") or "sum"
        self.user_prompt = self.spec.get("prompt") or "Describe the image."
        alpha, k, seed = (self.spec.get(k) for k in ("alpha", "noise_images", "seed"))
        self.alpha = 1.0 if alpha is None else float(alpha)
        self.noise_images = int(k or 3)
        self.seed = int(seed or 0)
        self.noise = self.spec.get("noise") or "input"

    def _fingerprint_options(self) -> dict[str, Any]:
        out = {
            **self._vlm_fingerprint(),
            "score": self.score_mode,
            "prompt": self.user_prompt,
            "alpha": self.alpha,
            "noise_images": self.noise_images,
            "seed": self.seed,
            "noise": self.noise,
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

    def caption_logprob(
        self, image: Any, texts: Sequence[str], transform: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(Σ log P(t_k | t_<k, image), token count) of each caption with one image (its
        processed inputs changed by `transform`, if given)."""
        turn = self.user_turn(self.user_prompt)
        lps = self.logprobs(image, [(turn, t) for t in texts], transform=transform)
        return np.array([lp.sum() for lp in lps]), np.array([len(lp) for lp in lps])

    def noise_for(self, image: Any) -> list[tuple[Any, Any]]:
        """The blind variant's K (image, input transform) pairs for `image`: `noise=input`,
        the real image with its pixel_values replaced by noise seeded `seed + j`;
        `noise=pixels`, 8-bit noise images of its size."""
        if self.noise == "input":
            return [(image, input_noise(self.seed + j)) for j in range(self.noise_images)]
        self._ensure_loaded()
        proc = getattr(self._processor, "image_processor", None)
        mean = getattr(proc, "image_mean", None) or [0.5, 0.5, 0.5]
        std = getattr(proc, "image_std", None) or [0.5, 0.5, 0.5]
        noise = pixel_noise_images(image.size, self.noise_images, self.seed, mean, std)
        return [(im, None) for im in noise]

    def blind_logprob(self, image: Any, texts: Sequence[str]) -> np.ndarray:
        """log((1/K) Σ_j P(t | noise_j)) of each caption."""
        from scipy.special import logsumexp

        sums = np.stack([self.caption_logprob(im, texts, t)[0] for im, t in self.noise_for(image)])
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

"""Noise images of the blind VGPTScore: P(t) estimated as the mean of P(t | noise_j) over
Gaussian-noise images ("Revisiting the Role of Language Priors in Vision-Language Models":
the language prior P(t) as the caption's probability given noise images in place of the image).

`input_noise(seed)` (the default, ``noise=input``) is an `InputTransform`: after the processor
has made the model's inputs from the real image (so the model gets as many image tokens, tiles
or patches as the real image gives it), every floating ``pixel_values`` tensor is replaced by a
standard normal draw of its shape — what reaches the model has mean 0, standard deviation 1
and no correlation between neighbouring values, whatever the real image's size. The draw is
`torch.randn` of one image's block from a CPU generator seeded with `seed`, repeated for every
row of the batch (all rows show one image): the first dimension of ``pixel_values`` holds the
rows' images (fixed-resolution families: (rows, C, H, W); LLaVA-NeXT / OneVision tiles and
Idefics3 / SmolVLM splits: (rows, tiles, C, H, W)) or, with ``image_grid_thw`` (Qwen-VL), the
rows' flattened patches, the same number per row. A tile or split that is all zeros (the
processor's padding, which Idefics3 recognises by its zeros) stays zero.

`pixel_noise_images` (``noise=pixels``) is the variant drawn before the processor: an 8-bit
RGB image of the real image's size whose values are standard normal in the processor's
normalised space (mapped back through its ``image_mean`` / ``image_std``, clipped to 0..255).
The processor's resize then shrinks and smooths it, so what the model sees has a smaller
spread and correlated neighbours that depend on the image's size (docs/fidelity.md, "Blind
VGPTScore noise").
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import numpy as np

from lexsem.models.vlm.sequences import InputTransform

__all__ = ["NOISE_KINDS", "input_noise", "pixel_noise_images"]

NOISE_KINDS: tuple[str, ...] = ("input", "pixels")


def _standard_normal_like(pixels: Any, n_images: int, seed: int) -> Any:
    """A standard normal tensor of `pixels`' shape, one block of `n_images` repeated."""
    import torch

    rows = int(pixels.shape[0])
    if n_images < 1 or rows % n_images:
        raise ValueError(f"pixel_values of {rows} rows do not split into {n_images} images")
    block = (rows // n_images, *pixels.shape[1:])
    generator = torch.Generator(device="cpu").manual_seed(seed)
    draw = torch.randn(block, generator=generator, dtype=torch.float32)
    noise = draw.repeat(n_images, *([1] * (draw.ndim - 1)))
    if pixels.ndim >= 5:  # tiles / splits: the processor's all-zero padding stays zero
        padding = pixels.flatten(2).abs().amax(dim=-1) == 0
        noise[padding.cpu()] = 0.0
    return noise.to(device=pixels.device, dtype=pixels.dtype)


def input_noise(seed: int) -> InputTransform:
    """The `InputTransform` that replaces the processor's ``pixel_values`` by standard normal
    noise seeded with `seed` (see the module doc)."""

    def transform(enc: MutableMapping[str, Any]) -> None:
        pixels = enc.get("pixel_values")
        if pixels is None or not pixels.is_floating_point():
            raise ValueError("the processor made no floating pixel_values to replace by noise")
        grid = enc.get("image_grid_thw")
        n_images = int(grid.shape[0]) if grid is not None else int(pixels.shape[0])
        enc["pixel_values"] = _standard_normal_like(pixels, n_images, seed)

    return transform


def pixel_noise_images(size: tuple[int, int], k: int, seed: int, mean: Any, std: Any) -> list[Any]:
    """`k` Gaussian-noise RGB images of `size` (width, height), image j seeded with `seed + j`:
    standard normal in the input space normalised by `mean` / `std` (per channel, 0..1
    scale), as 8-bit pixels (the ``noise=pixels`` variant)."""
    from PIL import Image

    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64), (3,))
    std = np.broadcast_to(np.asarray(std, dtype=np.float64), (3,))
    out = []
    for j in range(k):
        z = np.random.default_rng(seed + j).standard_normal((size[1], size[0], 3))
        pixels = np.clip(np.rint((mean + std * z) * 255.0), 0, 255).astype(np.uint8)
        out.append(Image.fromarray(pixels, "RGB"))
    return out

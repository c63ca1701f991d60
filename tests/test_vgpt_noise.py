"""The blind VGPTScore's noise (`lexsem.models.vlm.noise`, `vgpt:...?score=blind`): what
reaches the model in place of the image is standard normal in the model's input space — mean
0, standard deviation 1, no correlation between neighbouring values — for every processor of
the tiny families (fixed resolution, LLaVA-NeXT / OneVision tiles, Qwen-VL's flattened
patches, Idefics3 / SmolVLM splits), whatever the real image's size; seeded (`seed + j`) and
the same for every row of a batch. The `noise=pixels` variant (8-bit noise resized by the
processor) does not have these statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders import tiny_vlms_dynamic as tv
from builders import tiny_vlms_other as to
from builders.backends import require_module
from builders.tiny_llava import write_tiny_llava

pytestmark = [pytest.mark.torch, pytest.mark.numeric]

FACTORIES = {"llava": write_tiny_llava, **to.FACTORIES, **tv.FACTORIES}
SIZES = [(50, 37), (97, 130)]  # (width, height): neither the processors' own size
CAPTIONS = ["a dog runs", "a cat sleeps"]


@pytest.fixture(scope="module", params=list(FACTORIES))
def family(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    name = request.param
    if name == "smolvlm":
        require_module("num2words")
    return FACTORIES[name](tmp_path_factory.mktemp(name) / f"tiny-{name}")


def image(size: tuple[int, int], seed: int = 0) -> Image.Image:
    """A smooth real image (neighbouring pixels alike), so that noise is told from it."""
    rng = np.random.default_rng(seed)
    w, h = size
    x = np.linspace(0, 1, w)[None, :, None] * rng.uniform(50, 200, 3)
    y = np.linspace(0, 1, h)[:, None, None] * rng.uniform(0, 50, 3)
    return Image.fromarray(np.clip(x + y, 0, 255).astype(np.uint8))


def seen_pixels(spec: str, size: tuple[int, int]) -> tuple[list[Any], np.ndarray]:
    """The pixel_values of every forward call of the blind score of one image and two
    captions, and the scores."""
    from lexsem.models.factory import load_model

    scorer = load_model(spec, device="cpu")
    model = scorer._ensure_loaded()
    seen: list[Any] = []

    def hook(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        if kwargs.get("pixel_values") is not None:
            seen.append(kwargs["pixel_values"].detach().float().clone())

    handle = model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        im = image(size)
        scores = scorer.score([im, im], CAPTIONS)
    finally:
        handle.remove()
    return seen, scores


def real_values(pixels: Any) -> np.ndarray:
    """The values of `pixels` less the processor's all-zero padding tiles, as rows along the
    tensor's last axis."""
    x = pixels
    if x.ndim >= 5:
        keep = x.flatten(2).abs().amax(dim=-1) != 0
        x = x[keep]
    return x.reshape(-1, x.shape[-1]).numpy().astype(np.float64)


def lag1(rows: np.ndarray) -> float:
    a, b = rows[:, :-1].ravel(), rows[:, 1:].ravel()
    return float(np.corrcoef(a, b)[0, 1])


def test_what_reaches_the_model_is_standard_normal_at_any_image_size(family: Path) -> None:
    for size in SIZES:
        seen, scores = seen_pixels(f"vgpt:{family}?score=blind&noise_images=3&seed=5", size)
        assert seen and np.isfinite(scores).all()
        values = np.concatenate([real_values(p) for p in seen], axis=0)
        assert abs(values.mean()) < 0.05, (size, values.mean())
        assert abs(values.std() - 1.0) < 0.05, (size, values.std())
        assert abs(lag1(values)) < 0.05, (size, lag1(values))


def test_the_noise_is_seeded_and_one_image_for_every_row(family: Path) -> None:
    spec = f"vgpt:{family}?score=blind&noise_images=2&seed=5&reuse=false"
    first, a = seen_pixels(spec, SIZES[0])
    again, b = seen_pixels(spec, SIZES[0])
    np.testing.assert_array_equal(a, b)
    assert all(torch.equal(x, y) for x, y in zip(first, again, strict=True))
    assert not torch.equal(first[0], first[1])  # noise j = 0 and j = 1 differ
    other, _ = seen_pixels(spec.replace("seed=5", "seed=6"), SIZES[0])
    assert torch.equal(other[0], first[1])  # seed + j: seed 6's first is seed 5's second


def test_the_pixels_variant_is_smoothed_by_the_processor(tmp_path: Path) -> None:
    """8-bit noise drawn at the image's size, resized by the processor: shrunk and correlated
    (the reason the input-space draw is the default)."""
    folder = write_tiny_llava(tmp_path / "llava")
    seen, _ = seen_pixels(f"vgpt:{folder}?score=blind&noise=pixels", SIZES[1])
    values = np.concatenate([real_values(p) for p in seen], axis=0)
    assert values.std() < 0.8 and lag1(values) > 0.1

"""open_clip's image and text blocks run by `blocks.py` give open_clip's own features.

The ViT image tower through `vision.py` (fused oneDNN products on the CPU, attention by
`scaled_dot_product_attention` on views, the last block on the class token only) against
open_clip's `encode_image`, in fp32 (the tolerance rule of docs/testing.md) and bf16 (its
rounding), fused and unfused alike; the encoder's probe that keeps open_clip's own tower when
the two disagree; the fused products against `F.linear`; `equal_runs`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from builders.backends import require_module
from builders.numeric import BF16_RTOL, assert_close_to_reference
from builders.tiny_dual_models import write_tiny_openclip
from lexsem.models.backends.openclip import blocks as blocks_module
from lexsem.models.backends.openclip.blocks import Products
from lexsem.models.backends.openclip.encoder import OpenClipEncoder
from lexsem.models.backends.openclip.packed import equal_runs
from lexsem.models.backends.openclip.vision import vision_blocks

pytestmark = pytest.mark.torch

SMALL_TEXT = {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 1}


def _vit_b_32(pool_type: str = "tok", seed: int = 0) -> Any:
    """A random CLIP whose image tower is ViT-B/32's (12 blocks of width 768, 12 heads)."""
    oc = require_module("open_clip")
    from open_clip.model import CLIP

    vision = dict(oc.get_model_config("ViT-B-32")["vision_cfg"], pool_type=pool_type)
    torch.manual_seed(seed)
    return CLIP(embed_dim=512, vision_cfg=vision, text_cfg=SMALL_TEXT).eval()


def _unit(x: Any) -> np.ndarray:
    x = x.float().numpy() if hasattr(x, "numpy") else np.asarray(x)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("fused", [True, False])
def test_a_vit_b_32_image_tower_gives_open_clips_features(fused: bool) -> None:
    model = _vit_b_32()
    tower = vision_blocks(model)
    assert tower is not None and tower.pooled_token_only
    if not fused:
        tower = dataclasses.replace(tower, products=Products())
    pixels = torch.randn(3, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    rows: list[tuple[int, ...]] = []
    last_norm = tower.blocks[-1].ln_2
    hook = last_norm.register_forward_hook(lambda m, args, out: rows.append(tuple(args[0].shape)))
    try:
        with torch.inference_mode():
            got = tower.encode(pixels)
    finally:
        hook.remove()
    assert rows == [(3, 768)]  # the last block's MLP ran on the class token of each image only
    with torch.inference_mode():
        want = model.encode_image(pixels)
    assert_close_to_reference(got.numpy(), want.numpy())


def test_an_average_pooled_tower_runs_every_token_of_the_last_block() -> None:
    model = _vit_b_32(pool_type="avg", seed=2)
    tower = vision_blocks(model)
    assert tower is not None and not tower.pooled_token_only
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        got, want = tower.encode(pixels), model.encode_image(pixels)
    assert_close_to_reference(got.numpy(), want.numpy())


def test_a_bf16_tower_is_open_clips_bf16_to_its_rounding() -> None:
    model = _vit_b_32(seed=4)
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        fp32 = model.encode_image(pixels)
        model = model.to(torch.bfloat16)
        tower = vision_blocks(model)
        assert tower is not None
        got = tower.encode(pixels.to(torch.bfloat16))
        want = model.encode_image(pixels.to(torch.bfloat16))
    assert got.dtype == torch.bfloat16
    assert_close_to_reference(_unit(got), _unit(want), rtol=BF16_RTOL)
    assert_close_to_reference(_unit(got), _unit(fp32), rtol=BF16_RTOL)


def test_the_fused_products_are_f_linear() -> None:
    """oneDNN's fused linear (bias, GELU, residual add) against `F.linear` and torch's GELU, on
    a CPU where it runs; `Products()` (unfused) everywhere."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    x, residual = torch.randn(37, 64, generator=g), torch.randn(37, 96, generator=g)
    layer = torch.nn.Linear(64, 96)
    mlp = torch.nn.Sequential()
    mlp.add_module("c_fc", torch.nn.Linear(64, 96))
    mlp.add_module("gelu", torch.nn.GELU())
    mlp.add_module("c_proj", torch.nn.Linear(96, 64))
    fused = Products.for_weight(layer.weight)
    assert fused.fused == blocks_module._onednn_runs(torch.float32, torch.device("cpu"))
    for mine in {fused, Products()}:
        with torch.inference_mode():
            assert_close_to_reference(mine.linear(x, layer), F.linear(x, layer.weight, layer.bias))
            want = residual + layer(x)
            got = mine.add_linear(residual.clone(), x, layer, torch.nn.Identity())
            assert_close_to_reference(got, want)
            h, proj = mine.mlp(mlp, x)
            assert proj is mlp.c_proj
            assert_close_to_reference(h, F.gelu(mlp.c_fc(x)))


def test_without_onednn_the_products_are_unfused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks_module, "_RUNS", {})
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert not Products.for_weight(torch.zeros(2, 2)).fused
    assert not Products.for_weight(torch.zeros(2, 2, dtype=torch.float16)).fused


def test_the_encoder_keeps_open_clips_tower_when_the_probe_disagrees(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_tiny_openclip(tmp_path / "model", "lexsem-image-blocks")
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(6))
    enc = OpenClipEncoder(spec, device="cpu")
    got = enc.encode_images(pixels)
    assert enc._vision is not None  # the tiny ViT is run through vision.py
    with torch.inference_mode():
        want = enc._model.encode_image(pixels).numpy()
    assert_close_to_reference(got, want)

    from lexsem.models.backends.openclip.vision import VisionBlocks

    monkeypatch.setattr(VisionBlocks, "encode", lambda self, x: torch.zeros(x.shape[0], 16))
    enc = OpenClipEncoder(spec, device="cpu")
    assert_close_to_reference(enc.encode_images(pixels), want)
    assert enc._vision is None


def test_equal_runs() -> None:
    assert equal_runs([5, 5, 3, 3, 3, 7]) == [(0, 2, 5, 0), (10, 3, 3, 2), (19, 1, 7, 5)]
    assert equal_runs([4]) == [(0, 1, 4, 0)]
    assert equal_runs([]) == []


def test_towers_with_layer_scale_give_open_clips_features() -> None:
    """Blocks with LayerScale (`ls_init_value`) keep it: their residual adds are not fused."""
    require_module("open_clip")
    from open_clip.model import CLIP

    from lexsem.models.backends.openclip.trim import causal_text_tower

    vision = {"image_size": 32, "layers": 2, "width": 64, "head_width": 32, "patch_size": 8,
              "ls_init_value": 0.5}  # fmt: skip
    torch.manual_seed(7)
    model = CLIP(embed_dim=32, vision_cfg=vision, text_cfg=dict(SMALL_TEXT, ls_init_value=0.5))
    model = model.eval()
    tower = vision_blocks(model)
    assert tower is not None and type(tower.blocks[0].ls_1) is not torch.nn.Identity
    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(8))
    text = causal_text_tower(model)
    assert text is not None and text.packed is not None
    oc = require_module("open_clip")
    tokens = oc.get_tokenizer("ViT-B-32")(["a red cube", "two dogs beside a small green car"])
    with torch.inference_mode():
        assert_close_to_reference(tower.encode(pixels), model.encode_image(pixels))
        assert_close_to_reference(text.encode(tokens), model.encode_text(tokens))

"""The fine-tuning losses (lexsem.train.losses) against hand computations from their definitions:
BiVLC, §5 and App. E (CLIP_COCO, CLIP_TROHN-Text, CLIP_TROHN-Img) and NegCLIP ("When and why
vision-language models behave like bags-of-words, and what to do about it?", §4)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import get_args

import pytest
import torch

from builders.backends import require_module
from lexsem.errors import DataError
from lexsem.train.losses import (
    IMAGE_FIELDS,
    LOSSES,
    REGIME_FIELDS,
    Batch,
    batch_loss,
    clip_loss,
    loss_for,
    negclip_loss,
    paired_negatives_loss,
    text_negatives_loss,
)

pytestmark = pytest.mark.torch

D = 8
SCALE = 7.5


@pytest.fixture(autouse=True)
def _open_clip() -> None:
    require_module("open_clip")


def unit(n: int, seed: int, d: int = D) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    return x / x.norm(dim=-1, keepdim=True)


# -- the definitions, by hand: python floats and loops -------------------------------------------
def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def ce(logits: list[float], target: int) -> float:
    """−log softmax(logits)[target]."""
    top = max(logits)
    return -(logits[target] - top - math.log(sum(math.exp(v - top) for v in logits)))


def hand_loss(images: torch.Tensor, texts: torch.Tensor, n_pos: int, scale: float) -> float:
    """½[mean_i CE(row i over all texts, i) + mean_j CE(text j over all images, j)], the second
    only for the first `n_pos` texts (the images' own captions)."""
    imgs, txts = images.tolist(), texts.tolist()
    assert len(imgs) == n_pos
    i2t = [ce([scale * dot(im, t) for t in txts], i) for i, im in enumerate(imgs)]
    t2i = [ce([scale * dot(im, txts[j]) for im in imgs], j) for j in range(n_pos)]
    return 0.5 * (sum(i2t) / len(i2t) + sum(t2i) / len(t2i))


# -- each loss against its definition ------------------------------------------------------------
def test_clip_loss_matches_hand_computation() -> None:
    img, txt = unit(4, 0), unit(4, 1)
    assert clip_loss(img, txt, SCALE).item() == pytest.approx(
        hand_loss(img, txt, 4, SCALE), rel=1e-12
    )


def test_clip_loss_equals_open_clip_cliploss_when_square() -> None:
    from open_clip.loss import ClipLoss

    img, txt = unit(5, 2), unit(5, 3)
    scale = torch.tensor(SCALE, dtype=torch.float64)
    assert torch.allclose(clip_loss(img, txt, scale), ClipLoss()(img, txt, scale))


def test_text_negatives_loss_k1_matches_hand_computation() -> None:
    img, txt, neg = unit(3, 4), unit(3, 5), unit(3, 6)
    expected = hand_loss(img, torch.cat([txt, neg]), 3, SCALE)
    assert text_negatives_loss(img, txt, neg, SCALE).item() == pytest.approx(expected, rel=1e-12)


def test_text_negatives_loss_k2_both_layouts() -> None:
    n, k = 3, 2
    img, txt, neg = unit(n, 7), unit(n, 8), unit(n * k, 9)
    expected = hand_loss(img, torch.cat([txt, neg]), n, SCALE)
    flat = text_negatives_loss(img, txt, neg, SCALE)
    nested = text_negatives_loss(img, txt, neg.reshape(n, k, D), SCALE)
    assert flat.item() == pytest.approx(expected, rel=1e-12)
    assert nested.item() == pytest.approx(expected, rel=1e-12)


def test_texts_outnumber_images_stock_cliploss_fails_ours_is_right() -> None:
    """N images against N captions + N·k negatives: open_clip's `ClipLoss.forward` builds a
    (N+N·k)×N text→image matrix against N targets and cannot run; the paper's loss can."""
    from open_clip.loss import ClipLoss

    img, txt, neg = unit(3, 10), unit(3, 11), unit(6, 12)
    texts = torch.cat([txt, neg])
    with pytest.raises((ValueError, RuntimeError)):
        ClipLoss()(img, texts, SCALE)
    expected = hand_loss(img, texts, 3, SCALE)
    assert text_negatives_loss(img, txt, neg, SCALE).item() == pytest.approx(expected, rel=1e-12)
    # the negatives count: dropping them changes the loss
    assert clip_loss(img, txt, SCALE).item() != pytest.approx(expected)


def test_paired_negatives_loss_matches_hand_computation() -> None:
    img, txt, neg_img, neg_txt = unit(3, 13), unit(3, 14), unit(3, 15), unit(3, 16)
    images, texts = torch.cat([img, neg_img]), torch.cat([txt, neg_txt])
    expected = hand_loss(images, texts, 6, SCALE)
    got = paired_negatives_loss(img, txt, neg_img, neg_txt, SCALE)
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_negclip_loss_matches_hand_computation() -> None:
    n = 3
    img, txt, neg_txt = unit(n, 17), unit(n, 18), unit(n, 19)
    hard_img, hard_txt, hard_neg_txt = unit(n, 20), unit(n, 21), unit(n, 22)
    imgs = img.tolist() + hard_img.tolist()  # [I; I_hard], 2N
    txts = txt.tolist() + hard_txt.tolist() + neg_txt.tolist() + hard_neg_txt.tolist()  # 4N
    i2t = [ce([SCALE * dot(im, t) for t in txts], i) for i, im in enumerate(imgs)]
    t2i = [ce([SCALE * dot(im, txts[j]) for im in imgs], j) for j in range(2 * n)]
    expected = 0.5 * (sum(i2t) / (2 * n) + sum(t2i) / (2 * n))
    got = negclip_loss(img, txt, neg_txt, hard_img, hard_txt, hard_neg_txt, SCALE)
    assert got.item() == pytest.approx(expected, rel=1e-12)


def test_scale_as_tensor_or_float_agree() -> None:
    img, txt, neg = unit(3, 23), unit(3, 24), unit(3, 25)
    as_float = text_negatives_loss(img, txt, neg, SCALE)
    as_tensor = text_negatives_loss(img, txt, neg, torch.tensor(SCALE, dtype=torch.float64))
    assert torch.allclose(as_float, as_tensor)


# -- gradients and the aligned case --------------------------------------------------------------
def _leaves(*sizes: int) -> list[torch.Tensor]:
    return [unit(n, 100 + i).requires_grad_() for i, n in enumerate(sizes)]


@pytest.mark.parametrize(
    ("fn", "sizes"),
    [
        (clip_loss, (3, 3)),
        (text_negatives_loss, (3, 3, 6)),
        (paired_negatives_loss, (3, 3, 3, 3)),
        (negclip_loss, (3, 3, 3, 3, 3, 3)),
    ],
    ids=["clip", "trohn_text", "trohn_img", "negclip"],
)
def test_gradients_reach_every_input(
    fn: Callable[..., torch.Tensor], sizes: tuple[int, ...]
) -> None:
    leaves = _leaves(*sizes)
    scale = torch.tensor(SCALE, dtype=torch.float64, requires_grad=True)
    fn(*leaves, scale).backward()
    for i, x in enumerate([*leaves, scale]):
        assert x.grad is not None, f"input {i} got no gradient"
        assert torch.isfinite(x.grad).all()
        assert x.grad.abs().sum() > 0, f"input {i} got a zero gradient"


def test_perfect_alignment_gives_near_zero_loss() -> None:
    """Each image equal to its caption, all else orthogonal: with scale 100 every loss ~ 0."""
    n = 3
    basis = torch.linalg.qr(torch.randn(16, 16, dtype=torch.float64))[0].T  # orthonormal rows
    a, b, c, e = basis[:n], basis[n : 2 * n], basis[2 * n : 3 * n], basis[3 * n : 4 * n]
    scale = 100.0
    assert clip_loss(a, a, scale).item() < 1e-6
    assert text_negatives_loss(a, a, torch.cat([b, c]), scale).item() < 1e-6
    assert paired_negatives_loss(a, a, b, b, scale).item() < 1e-6
    assert negclip_loss(a, a, c, b, b, e, scale).item() < 1e-6
    # and a negative equal to the caption is not "aligned": the loss is about log 2 per row
    assert text_negatives_loss(a, a, a, scale).item() > 0.3


# -- clear errors --------------------------------------------------------------------------------
def test_mismatched_rows_name_the_tensors() -> None:
    with pytest.raises(ValueError, match=r"txt has 2 rows but img has 3"):
        clip_loss(unit(3, 0), unit(2, 1), SCALE)
    with pytest.raises(ValueError, match=r"neg_txt has 2 rows but neg_img has 3"):
        paired_negatives_loss(unit(3, 0), unit(3, 1), unit(3, 2), unit(2, 3), SCALE)
    with pytest.raises(ValueError, match=r"neg_img has 2 rows but img has 3"):
        paired_negatives_loss(unit(3, 0), unit(3, 1), unit(2, 2), unit(2, 3), SCALE)
    with pytest.raises(ValueError, match=r"hard_neg_txt has 4 rows but img has 3"):
        n3 = [unit(3, s) for s in range(5)]
        negclip_loss(*n3, unit(4, 9), SCALE)


def test_negatives_must_be_k_per_image() -> None:
    with pytest.raises(ValueError, match=r"neg_txt has 4 rows, not a multiple of img's 3"):
        text_negatives_loss(unit(3, 0), unit(3, 1), unit(4, 2), SCALE)
    with pytest.raises(ValueError, match=r"neg_txt of shape \(N, k, d\).*img has 3 rows"):
        text_negatives_loss(unit(3, 0), unit(3, 1), unit(4, 2).reshape(2, 2, D), SCALE)
    with pytest.raises(ValueError, match=r"neg_txt is empty"):
        text_negatives_loss(unit(3, 0), unit(3, 1), unit(3, 2)[:0], SCALE)


def test_bad_dims_and_scale_are_named() -> None:
    with pytest.raises(ValueError, match=r"neg_txt has embedding dim 4 but img has 8"):
        text_negatives_loss(unit(3, 0), unit(3, 1), unit(3, 2, d=4), SCALE)
    with pytest.raises(ValueError, match=r"img must be 2-D"):
        clip_loss(unit(3, 0).reshape(3, 2, 4), unit(3, 1), SCALE)
    with pytest.raises(TypeError, match=r"txt must be a torch.Tensor"):
        clip_loss(unit(3, 0), [[0.0] * D] * 3, SCALE)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"scale must be a scalar"):
        clip_loss(unit(3, 0), unit(3, 1), torch.ones(2))
    with pytest.raises(ValueError, match=r"scale must be > 0"):
        clip_loss(unit(3, 0), unit(3, 1), -1.0)


# -- regimes and batches -------------------------------------------------------------------------
def test_regimes_cover_the_config_and_the_loss_signatures() -> None:
    from inspect import signature

    from lexsem.train.config import Regime

    assert set(LOSSES) == set(REGIME_FIELDS) == set(get_args(Regime))
    for regime, fn in LOSSES.items():
        assert tuple(signature(fn).parameters)[:-1] == REGIME_FIELDS[regime]
        assert loss_for(regime) is fn
    assert loss_for("TROHN-Text") is text_negatives_loss
    assert {"img", "neg_img", "hard_img"} == IMAGE_FIELDS


def test_unknown_regime_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown training regime 'simclr'.*clip_coco"):
        loss_for("simclr")


def test_batch_check_names_missing_and_extra_fields() -> None:
    batch = Batch(img=unit(3, 0), txt=unit(3, 1), neg_txt=unit(3, 2))
    batch.check("trohn_text")
    with pytest.raises(DataError, match=r"trohn_img regime needs .*; this batch lacks neg_img"):
        batch.check("trohn_img")
    with pytest.raises(DataError, match=r"lacks hard_img, hard_txt, hard_neg_txt"):
        batch.check("negclip")
    with pytest.raises(DataError, match=r"this batch has neg_txt, which the clip_coco"):
        batch.check("clip_coco")


def test_batch_loss_dispatches_by_regime() -> None:
    n = 3
    t = {name: unit(n, i) for i, name in enumerate(REGIME_FIELDS["negclip"])}
    batch = Batch(**t)
    expected = negclip_loss(**t, scale=SCALE)
    assert torch.equal(batch_loss("negclip", batch, SCALE), expected)
    plain = Batch(img=t["img"], txt=t["txt"])
    assert torch.equal(batch_loss("clip_coco", plain, SCALE), clip_loss(t["img"], t["txt"], SCALE))

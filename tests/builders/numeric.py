"""Comparing a model's floats with a reference computation, on any CPU.

The rule (docs/testing.md, "Tests on any CPU"):

* Exact (`np.testing.assert_array_equal`) only where the two values come from the same
  computation: the same kernels on the same shapes in the same process. A cache or file round
  trip, a pure function called twice, the same batch encoded again, token ids, pixels. That
  holds on every CPU.
* Everything else is compared with `assert_close_to_reference`: a model against a direct
  computation of the same model through another library, a batch against its rows one by one
  (other shapes pick other GEMM blockings), a checkpoint form against another, float32 against
  float64. fp32 kernels differ between CPUs (AVX-512, AVX2, SSE, NEON; oneDNN, MKL, OpenBLAS;
  the thread count): each sums in its own order, so the last bits of a result move.

`assert_close_to_reference` judges the error relative to the size of the values, never with a
fixed absolute tolerance: one vector (an embedding: a row along the last axis) passes when

    ||actual - expected||_2  <=  rtol * max(||expected||_2, scale)

and one scalar (a log-prob, a score, one value of a 0-d or 1-d array) passes when
|actual - expected| <= rtol * max(|expected|, scale). A vector within `rtol` of its reference
has cosine similarity >= 1 - rtol**2 / 2 with it and the same norm to `rtol`, so every cosine or
dot product computed from it moves by about `rtol` at most. `FP32_RTOL` = 1e-5 is about 80 fp32
ulps (eps = 1.2e-7): the tiny test models differ between kernel paths by at most a few ulps
relative to the size of their outputs (1e-7 to 1e-6), and a real bug (a wrong pooling, a
missing normalisation, a truncation, a wrong checkpoint key) moves them by 1e-3 or more.
`scale` is for values whose own size says nothing about their rounding error: a difference
of two log-probs, a logit near 0, a cosine (bounded by 1) are computed from terms of size about
`scale`, and their error is that of the terms.

`FINE_RTOL` is the one tighter tolerance, for the few tests whose effect is smaller than
`FP32_RTOL` (see its comment); `BF16_RTOL` compares a bfloat16 forward pass with float32.

A test that checks two things DIFFER keeps `assert not np.allclose(..., rtol=...)` with a
threshold far above `FP32_RTOL` (1e-3 or more), so that it fails only when they really agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FP32_RTOL = 1e-5
# For a test that must resolve an effect smaller than FP32_RTOL (a RoPE position shift, a mask
# that lets a token see its future moves a tiny random VLM's log-probs by about 1e-6 of their
# size). Those log-probs are a log-softmax in float64 of near-uniform fp32 logits: their size
# is log(vocabulary), and the kernel paths move them by under 1e-9 of it.
FINE_RTOL = 1e-7
# bfloat16 keeps 8 bits of mantissa (eps = 2**-8 = 3.9e-3); a forward pass in bf16 against the
# same model in fp32 lands within a few of those
BF16_RTOL = 5e-2


def _as_array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, without importing torch here
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def relative_error(
    actual: Any, expected: Any, *, axis: int | None = -1, scale: float = 0.0
) -> np.ndarray:
    """The error of each scalar (0-d or 1-d input, or `axis=None`) or each vector along `axis`,
    divided by max(its reference's size, `scale`); 0 where both are NaN, inf where one is."""
    a, e = _as_array(actual), _as_array(expected)
    if a.shape != e.shape:
        raise AssertionError(f"shape {a.shape} != reference shape {e.shape}")
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    a, e = np.where(nan_a, 0.0, a), np.where(nan_e, 0.0, e)
    if a.ndim <= 1 or axis is None:
        err, size = np.abs(a - e), np.abs(e)
        nan_mismatch = nan_a != nan_e
    else:
        err, size = np.linalg.norm(a - e, axis=axis), np.linalg.norm(e, axis=axis)
        nan_mismatch = (nan_a != nan_e).any(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err == 0, 0.0, err / np.maximum(size, scale))
    return np.where(nan_mismatch, np.inf, ratio)


def assert_close_to_reference(
    actual: Any,
    expected: Any,
    *,
    rtol: float = FP32_RTOL,
    axis: int | None = -1,
    scale: float = 0.0,
    err_msg: str = "",
) -> None:
    """Assert that `actual` is `expected` up to float rounding, relative to the values' size.

    `axis`: the axis whose values form one vector (an embedding); with a 0-d or 1-d array, or
    `axis=None`, every value is a scalar of its own. `scale`: the size below which errors are
    judged against `scale` instead (see the module docstring). NaNs must match NaNs. A single
    embedding given as a 1-d array would be judged value by value: pass it as a (1, d) row.
    """
    ratio = np.atleast_1d(relative_error(actual, expected, axis=axis, scale=scale))
    bad = ~(ratio <= rtol)
    if bad.any():
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape))
        unit = "values" if np.ndim(actual) <= 1 or axis is None else f"vectors along axis {axis}"
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} {unit} differ from the reference by more than "
            f"rtol={rtol:g} of their size; worst at {worst}: {float(ratio[worst]):.3g} "
            f"{err_msg}".rstrip()
        )

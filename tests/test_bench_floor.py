"""bench/floor.py: the FLOPs it counts are the hand count of the work (`make bench` divides
them by the measured matmul floor)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.torch

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _floor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_floor", BENCH / "floor.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_count_flops_of_a_tiny_model_is_the_hand_count() -> None:
    import torch

    floor = _floor()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    x = torch.randn(3, 8)
    flops, out = floor.count_flops(model, x)
    # 2 FLOPs per multiply-add: 3 rows x (8x16 + 16x4) weights; GELU and biases are not counted
    assert flops == 2 * 3 * (8 * 16 + 16 * 4) == 1152
    assert out.shape == (3, 4)
    a, b = torch.randn(5, 6), torch.randn(6, 7)
    assert floor.count_flops(torch.matmul, a, b)[0] == 2 * 5 * 6 * 7
    # backward: the gradients of the input and of the weight, twice the forward's matmul
    lin = torch.nn.Linear(8, 4, bias=False)
    xg = torch.randn(3, 8, requires_grad=True)
    assert floor.count_flops(lambda: lin(xg).sum().backward())[0] == 3 * (2 * 3 * 8 * 4)


def test_fraction_of_the_floor() -> None:
    floor = _floor()
    assert floor.fraction(50e9, 2.0, 100.0) == pytest.approx(0.25)
    assert floor.fraction(1e9, 0.0, 100.0) == 0.0
    line = floor.floor_line("text tower", 50e9, 2.0, 100.0, "fp32")
    assert line == (
        "text tower: 50.0 GFLOP in 2.00 s = 25.0 GFLOP/s, 25% of the fp32 floor (100.0 GFLOP/s)"
    )


def test_cpu_kind_names_the_bf16_flags() -> None:
    floor = _floor()
    kind = floor.cpu_kind()
    assert set(kind.flags) <= {"avx512_bf16", "amx_bf16"} and kind.threads >= 1
    assert kind.capability in kind.line() and "torch threads" in kind.line()


def test_matmul_floor_is_measured_at_the_size_asked_or_smaller() -> None:
    floor = _floor()
    gflops, size = floor.matmul_gflops("fp32", n=128, seconds=0.05)
    assert gflops > 0 and size == 128  # a 128x128 product is far under the time allowed


def test_attention_in_inference_counts_its_projections() -> None:
    """nn.MultiheadAttention under inference_mode takes a fused fast path whose projections
    FlopCounterMode would not see: counted, they are there."""
    import torch

    floor = _floor()
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x = torch.randn(3, 5, 16)
    with torch.inference_mode():
        flops = floor.count_flops(lambda: mha(x, x, x, need_weights=False))[0]
    rows = 3 * 5
    projections = 2 * rows * 16 * (3 * 16) + 2 * rows * 16 * 16  # QKV in, output out
    attention = 2 * (2 * 3 * 2 * 5 * 5 * 8)  # QK^T and AV: batch x heads x 5 x 5 x head dim
    assert flops == projections + attention
    assert torch.backends.mha.get_fastpath_enabled()  # restored


def test_onednn_fused_linear_layers_are_counted_as_linear_layers() -> None:
    """`lexsem`'s open_clip blocks run their linear layers as oneDNN's fused op on the CPU
    (`blocks.py`): both of its overloads count 2 FLOPs per multiply-add, as `F.linear` does."""
    import torch

    floor = _floor()
    mkldnn = torch.ops.mkldnn
    if not torch.backends.mkldnn.is_available() or not hasattr(mkldnn, "_linear_pointwise"):
        pytest.skip("this torch has no oneDNN fused linear op: lexsem runs F.linear instead")
    x, w, b = torch.randn(5, 8), torch.randn(16, 8), torch.randn(16)
    other = torch.randn(5, 16)
    hand = 2 * 5 * 8 * 16
    assert floor.count_flops(torch.nn.functional.linear, x, w, b)[0] == hand
    assert floor.count_flops(mkldnn._linear_pointwise, x, w, b, "gelu", [], "none")[0] == hand
    assert floor.count_flops(mkldnn._linear_pointwise.binary, x, other, w, b, "add")[0] == hand

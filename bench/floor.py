"""The machine's floor: what its matrix multiplications reach, and what a piece of work costs.

Shared by the bench parts that print a *fraction of the floor* beside their ratios
(`floor_bench.py`, `peer_bench.py`, `vqa_bench.py`):

- `cpu_kind`: the CPU's model name, torch's CPU capability and the flags that decide what bf16
  costs (avx512_bf16, amx_bf16): figures from machines of different kinds are never one row;
- `matmul_gflops`: torch's throughput on a square matmul (fp32 or bf16; 2048x2048, smaller
  where that would take long) with the run's threads, the floor of work made of matrix
  multiplications;
- `count_flops`: the floating-point operations of a call, counted by torch's
  `FlopCounterMode` (matmuls, convolutions and attention, the CPU's flash attention included:
  2 per multiply-add; element-wise work is not counted);
- `fraction`: counted FLOPs over the time they took, as a share of the floor.

Run as a script it prints the CPU kind and both matmul floors (`python bench/floor.py`); with
`--checkpoint CKPT --texts FILE --json OUT` it also counts the FLOPs of one image and of the
texts through an open_clip model (`peer_bench.py` runs it so, in a process of its own).
"""

from __future__ import annotations

import math
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@dataclass(frozen=True)
class CpuKind:
    model: str
    capability: str  # torch.backends.cpu.get_cpu_capability(): DEFAULT, AVX2, AVX512, ...
    flags: tuple[str, ...]  # of BF16_FLAGS, those the CPU has
    threads: int

    def line(self) -> str:
        bf16 = ", ".join(self.flags) if self.flags else "no avx512_bf16 / amx_bf16 (bf16 emulated)"
        return (
            f"CPU: {self.model} ({platform.machine()}), torch capability {self.capability}, "
            f"{bf16}, {self.threads} torch threads"
        )


def cpu_kind() -> CpuKind:
    """The CPU this bench runs on, as its figures must be labelled."""
    import torch

    model, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model in ("unknown CPU", platform.machine()):
                model = value.strip()
            elif key.strip().lower() in ("flags", "features"):
                flags |= set(value.split())
    except OSError:
        pass
    return CpuKind(
        model=model,
        capability=torch.backends.cpu.get_cpu_capability(),
        flags=tuple(f for f in BF16_FLAGS if f in flags),
        threads=torch.get_num_threads(),
    )


def matmul_gflops(dtype: str, n: int = 2048, seconds: float = 2.0) -> tuple[float, int]:
    """(GFLOP/s, size) of a square matmul in `dtype` (`fp32` or `bf16`) on the CPU, with torch's
    threads: the best of the repeats run in about `seconds` after one warm-up, at `n`x`n`, or
    smaller where one product at twice the size would take over `seconds` (bf16 without native
    support runs at a fraction of a GFLOP/s on some CPUs)."""
    import torch

    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(0)
    size = min(256, n)
    while True:
        a = torch.randn(size, size, generator=gen).to(dt)
        b = torch.randn(size, size, generator=gen).to(dt)
        a @ b  # warm-up: threads, kernels
        t0 = time.perf_counter()
        a @ b
        took = time.perf_counter() - t0
        if size >= n or took * 8 > seconds:  # twice the size: 8 times the work
            break
        size *= 2
    best, spent = took, took
    while spent < seconds:
        t0 = time.perf_counter()
        a @ b
        took = time.perf_counter() - t0
        best, spent = min(best, took), spent + took
    return 2 * size**3 / best / 1e9, size


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, Any]:
    """(FLOPs of `fn(*args, **kwargs)` as torch's FlopCounterMode counts them, its result).
    `nn.MultiheadAttention`'s inference fast path is off while counting: its fused kernel runs
    the projections below what FlopCounterMode sees (a ViT-B/32 image would count 5.9 GFLOP
    instead of 8.8); the operations counted are the same."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    _count_cpu_ops()
    counter = FlopCounterMode(display=False)
    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with counter:
            out = fn(*args, **kwargs)
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)
    return int(counter.get_total_flops()), out


def _count_cpu_ops() -> None:
    """Give FlopCounterMode the formulas of the CPU ops it has none for: torch's CPU flash
    attention (forward and backward) those of its CUDA kernels (the same products; the formula
    counts a causal attention's full square), and oneDNN's fused linear layer
    (`torch.ops.mkldnn._linear_pointwise`, both overloads: `lexsem`'s open_clip blocks on the
    CPU, `blocks.py`) 2 FLOPs per multiply-add of its product, its bias, activation and
    residual add not counted, as for any linear layer."""
    import torch
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten
    pairs = [
        (getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None), fc.sdpa_flop),
        (
            getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None),
            fc.sdpa_backward_flop,
        ),
        (getattr(torch.ops.mkldnn, "_linear_pointwise", None), fc.shape_wrapper(_linear_flop)),
    ]
    for op, formula in pairs:
        if op is not None and op not in fc.flop_registry:
            fc.flop_registry[op] = formula


def _linear_flop(x_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """A linear layer's product: 2 x (output elements) x (input features)."""
    return 2 * math.prod(int(size) for size in out_shape) * int(x_shape[-1])


def fraction(flops: float, seconds: float, floor_gflops: float) -> float:
    """The share of the floor reached: (flops / seconds) / floor."""
    return flops / seconds / 1e9 / floor_gflops if seconds > 0 and floor_gflops > 0 else 0.0


def floor_line(label: str, flops: float, seconds: float, floor_gflops: float, dtype: str) -> str:
    """`label: 12.3 GFLOP in 1.20 s = 10.3 GFLOP/s, 45% of the fp32 floor (23.0 GFLOP/s)`."""
    rate = flops / seconds / 1e9 if seconds > 0 else 0.0
    share = fraction(flops, seconds, floor_gflops)
    return (
        f"{label}: {flops / 1e9:.1f} GFLOP in {seconds:.2f} s = {rate:.1f} GFLOP/s, "
        f"{100 * share:.0f}% of the {dtype} floor ({floor_gflops:.1f} GFLOP/s)"
    )


def image_flops(encoder: Any) -> int:
    """FLOPs of one image through `encoder`'s image tower (an `openclip:` encoder)."""
    import torch

    size = encoder.image_config["size"]
    side = size if isinstance(size, int) else size[-1]
    pixels = torch.zeros(1, 3, side, side)
    encoder.encode_images(pixels)  # loading runs a text probe: not this image's work
    return count_flops(encoder.encode_images, pixels)[0]


def text_flops(encoder: Any, texts: list[str]) -> int:
    """FLOPs of `texts` through `encoder`'s text tower as the engine runs them: a causal tower
    (`OpenClipEncoder.trims_padding`) up to each text's end-of-text token, any other at its full
    context. Counted once per token count on one text of that count (a tower's FLOPs per text
    depend on its width only). A packed tower (`packed.py`) runs each text's own tokens through
    its linear layers, so this is the work it does but for attention over the batch's padded
    width; a trimmed tower that is not packed runs each batch at its longest text."""
    encoder.encode(texts[:1])  # loads the weights: whether the tower is trimmed is known then
    lengths = encoder._token_lengths(texts) or [encoder.context_length] * len(texts)
    one: dict[int, str] = {}
    count: dict[int, int] = {}
    for text, n in zip(texts, lengths, strict=True):
        one.setdefault(n, text)
        count[n] = count.get(n, 0) + 1
    return sum(count[n] * count_flops(encoder.encode, [one[n]])[0] for n in count)


def openclip_floor(checkpoint: str, arch: str, texts: list[str]) -> dict[str, Any]:
    """The CPU kind, the fp32 and bf16 matmul floors, and the FLOPs of one image and of
    `texts` through an open_clip model of `arch` with the weights of `checkpoint`."""
    from lexsem.models.factory import load_model

    encoder = load_model(f"openclip:{arch}@{checkpoint}?quick_gelu=false", device="cpu")
    kind = cpu_kind()
    return {
        "cpu": kind.line(),
        "bf16_flags": list(kind.flags),
        "matmul_gflops": {"fp32": matmul_gflops("fp32")[0], "bf16": matmul_gflops("bf16")[0]},
        "image_flops": image_flops(encoder),
        "text_flops": text_flops(encoder, texts),
        "texts": len(texts),
    }


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", help="open_clip weights: also count the towers' FLOPs")
    ap.add_argument("--arch", default="ViT-B-32")
    ap.add_argument("--texts", type=Path, help="a JSON list of the texts to count")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    if args.checkpoint:
        texts = json.loads(args.texts.read_text()) if args.texts else []
        figures = openclip_floor(args.checkpoint, args.arch, texts)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2))
        print(json.dumps(figures))
        return 0
    print(cpu_kind().line())
    for dtype in ("fp32", "bf16"):
        gflops, size = matmul_gflops(dtype)
        print(f"matmul {size}x{size} {dtype}: {gflops:.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

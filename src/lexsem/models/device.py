"""Choose the torch device and dtype a model runs on.

`select_device` answers a device string (`cpu`, `cuda`, `cuda:N`, `mps`); `select_dtype` a dtype
name (`fp32`, `fp16`, `bf16`) and `dtype_choice` the same with the reason, in words;
`torch_dtype` turns that name into a `torch.dtype`. torch is
imported lazily, inside the functions, and `select_device("auto")` avoids importing it at all on
a Linux machine without GPU device nodes (CUDA needs /dev/nvidia*, ROCm /dev/kfd): a warm rerun
served from the embedding cache then never pays for importing torch.
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.errors import ModelError

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
DTYPES = ("fp32", "fp16", "bf16")
DTYPE_CHOICES = ("auto", *DTYPES)

_DTYPE_ALIASES = {
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
}


def _no_gpu_device_nodes() -> bool:
    """True when this is Linux and there is no CUDA/ROCm device node, so no GPU torch could use."""
    if not sys.platform.startswith("linux") or "torch" in sys.modules:
        return False
    return not (glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/kfd"))


def _mps_available(torch: Any) -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def select_device(requested: str | None = None) -> str:
    """The device to run on: `auto`/None → cuda if available, else mps, else cpu.

    Explicit choices (`cpu`, `cuda`, `cuda:N`, `mps`) are checked; one that is not available
    raises ModelError saying why.
    """
    req = (requested or "auto").strip().lower()
    if req == "cpu":
        return "cpu"
    if req == "auto":
        if _no_gpu_device_nodes():
            return "cpu"
        import torch

        if torch.cuda.is_available():
            return "cuda"
        if _mps_available(torch):
            return "mps"
        return "cpu"
    if req == "cuda" or req.startswith("cuda:"):
        index_str = req.partition(":")[2]
        if req != "cuda" and not index_str.isdigit():
            raise ModelError(f"device {requested!r}: expected cuda or cuda:N (N a GPU index)")
        import torch

        if not torch.cuda.is_available():
            built = torch.version.cuda or "none (a CPU-only build)"
            raise ModelError(
                f"device {requested!r} was requested but CUDA is not available "
                f"(torch {torch.__version__}, CUDA build: {built}); use --device cpu or auto"
            )
        if index_str and int(index_str) >= torch.cuda.device_count():
            raise ModelError(
                f"device {requested!r}: only {torch.cuda.device_count()} CUDA device(s) visible"
            )
        return req
    if req == "mps":
        import torch

        if not _mps_available(torch):
            raise ModelError(
                "device 'mps' was requested but Apple MPS is not available on this machine; "
                "use --device cpu or auto"
            )
        return "mps"
    raise ModelError(f"unknown device {requested!r}; choose one of: {', '.join(DEVICE_CHOICES)}")


def normalize_dtype(requested: str | None) -> str:
    """`auto` or a canonical dtype name (`fp32`, `fp16`, `bf16`); ModelError for anything else."""
    if requested is None:
        return "auto"
    req = requested.strip().lower()
    if req == "auto":
        return "auto"
    try:
        return _DTYPE_ALIASES[req]
    except KeyError:
        raise ModelError(
            f"unknown dtype {requested!r}; choose one of: {', '.join(DTYPE_CHOICES)}"
        ) from None


# CPU flags of native bf16 arithmetic (/proc/cpuinfo): x86's AVX512-BF16 and AMX-BF16, ARM's
# BF16 extension. Without them torch runs bf16 by converting to fp32 and back, which is slower
# than fp32 and still rounds like bf16.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (the `flags` line of /proc/cpuinfo on x86, `Features` on ARM);
    empty where there is no /proc/cpuinfo (macOS, Windows)."""
    try:
        text = CPUINFO.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return frozenset(value.split())
    return frozenset()


def native_bf16_flags() -> list[str]:
    """The flags of native bf16 arithmetic this CPU has (none: bf16 would be emulated)."""
    flags = cpu_flags()
    return [f for f in NATIVE_BF16_FLAGS if f in flags]


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype a model runs in and, for `auto`, why (one line; None for an explicit dtype or
    the default)."""

    name: str
    reason: str | None = None


def dtype_choice(requested: str | None, device: str) -> DtypeChoice:
    """The dtype to run in. None (not given) → fp32 on cpu and mps; on cuda bf16 when the GPU
    supports it, else fp16. `auto` → the same, except bf16 on a CPU with native bf16 arithmetic
    (`native_bf16_flags`), and says which it picked and why. Explicit choices are returned in
    canonical form (bf16 on a GPU without bf16 support raises ModelError)."""
    name = "default" if requested is None else normalize_dtype(requested)
    kind = device.split(":", 1)[0]
    if name in ("default", "auto"):
        if kind == "cuda":
            import torch

            picked = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
            why = f"auto: {picked}, what this GPU supports ({device})"
            return DtypeChoice(picked, why if name == "auto" else None)
        if name == "default":
            return DtypeChoice("fp32")
        if kind != "cpu":
            return DtypeChoice("fp32", f"auto: fp32 on {device}")
        native = native_bf16_flags()
        if native:
            return DtypeChoice(
                "bf16", f"auto: bf16, this CPU has native bf16 ({', '.join(native)})"
            )
        return DtypeChoice(
            "fp32",
            "auto: fp32, this CPU has no native bf16 (no avx512_bf16, amx_bf16 or bf16 flag)",
        )
    if name == "bf16" and kind == "cuda":
        import torch

        if not torch.cuda.is_bf16_supported():
            raise ModelError(f"dtype bf16 is not supported by this GPU ({device}); use fp16")
    return DtypeChoice(name)


def select_dtype(requested: str | None, device: str) -> str:
    """The dtype name to run in (`dtype_choice` without the reason)."""
    return dtype_choice(requested, device).name


def torch_dtype(name: str) -> Any:
    """The `torch.dtype` for a canonical dtype name."""
    import torch

    table = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    try:
        return table[normalize_dtype(name)]
    except KeyError:
        raise ModelError(f"dtype {name!r} has no fixed torch dtype; resolve it first") from None

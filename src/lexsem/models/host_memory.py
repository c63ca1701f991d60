"""Freed tensor memory kept by the process for the next tensor, not handed back to the kernel.

A model on the CPU allocates every activation anew: a ViT-B/32 text batch's MLP output alone is
tens of MB, made and freed once per layer per batch. glibc's malloc serves a block that large
with a fresh `mmap` (above `M_MMAP_THRESHOLD`, which it raises only up to 32 MiB) and gives it
back with `munmap` when freed, and trims the top of its heap past `M_TRIM_THRESHOLD`; so every
layer's output is new memory that the kernel faults in and zeroes page by page, inside the
matrix product that first writes it. Measured in one process on the 2-core AMD EPYC
(`docs/performance.md`, "Freed memory kept"): about a million page faults per 1,024 captions in
fp32, and each tower 5-15% slower than with the memory kept. PyTorch's CPU performance guide
points the same way (jemalloc or tcmalloc, which keep freed memory).

`keep_freed_memory` raises both thresholds (`mallopt`) once per process, when a model is first
loaded onto the CPU: large blocks come from the heap and freed ones are reused. The process
keeps its peak memory until it exits rather than returning it between batches. It does nothing
off Linux/glibc, or when the user chose an allocator already (`LD_PRELOAD` of jemalloc or
tcmalloc, glibc's `MALLOC_*_` variables or `GLIBC_TUNABLES` for malloc), or sets
`LEXSEM_KEEP_FREED_MEMORY=0`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# mallopt's parameters (glibc <malloc.h>)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# blocks up to 1 GiB come from the heap; the heap's free top is kept up to 2 GiB - 1
MMAP_THRESHOLD = 1 << 30
TRIM_THRESHOLD = (1 << 31) - 1
OFF_SWITCH = "LEXSEM_KEEP_FREED_MEMORY"

_applied: bool | None = None


def user_chose_allocator(environ: dict[str, str] | None = None) -> str | None:
    """Why the allocator is left alone (the user's own choice, in words), else None."""
    env = os.environ if environ is None else environ
    if env.get(OFF_SWITCH, "").strip().lower() in ("0", "false", "no", "off"):
        return f"{OFF_SWITCH}={env[OFF_SWITCH]}"
    preload = env.get("LD_PRELOAD", "")
    if any(name in preload for name in ("jemalloc", "tcmalloc", "mimalloc")):
        return f"LD_PRELOAD={preload}"
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"):
        if name in env:
            return f"{name}={env[name]}"
    if "glibc.malloc." in env.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES (malloc)"
    return None


def keep_freed_memory() -> bool:
    """Raise glibc malloc's mmap and trim thresholds for this process (once; see the module
    doc). True when they are raised (now or before), False when left alone."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if not sys.platform.startswith("linux") or user_chose_allocator() is not None:
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    _applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    return _applied

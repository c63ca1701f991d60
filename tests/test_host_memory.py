"""`lexsem.models.host_memory`: freed memory reused by the process (glibc), the user's own
allocator choice left alone, and a model loaded onto the CPU turning it on."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from lexsem.models import host_memory


def test_the_users_allocator_choice_is_left_alone() -> None:
    choose = host_memory.user_chose_allocator
    assert choose({}) is None
    assert choose({"LEXSEM_KEEP_FREED_MEMORY": "1"}) is None
    assert choose({"LEXSEM_KEEP_FREED_MEMORY": "0"}) == "LEXSEM_KEEP_FREED_MEMORY=0"
    assert "jemalloc" in (choose({"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}) or "")
    assert choose({"MALLOC_MMAP_THRESHOLD_": "65536"}) == "MALLOC_MMAP_THRESHOLD_=65536"
    assert choose({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}) == "GLIBC_TUNABLES (malloc)"
    assert choose({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"}) is None


# Allocates and frees a 64 MiB block 20 times, before and after `keep_freed_memory`, and
# prints the minor page faults of each round: glibc serves a block above its mmap threshold
# (raised dynamically only up to 32 MiB) with a fresh mapping the kernel faults in page by page.
FAULTS = textwrap.dedent(
    """
    import ctypes, resource, sys
    from lexsem.models import host_memory

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    size = 64 << 20

    def faults():
        start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(20):
            block = libc.malloc(size)
            ctypes.memset(block, 1, size)  # touch every page
            libc.free(block)
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start

    before = faults()
    kept = host_memory.keep_freed_memory()
    print(before, kept, faults(), host_memory.keep_freed_memory())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc (Linux)")
def test_freed_memory_is_reused_not_faulted_in_again() -> None:
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", FAULTS], capture_output=True, text=True, env=env, check=True
    )
    before, kept, after, again = done.stdout.split()
    pages = (64 << 20) // 4096
    assert kept == again == "True"
    assert int(before) >= 15 * pages  # a fresh mapping (nearly) every round
    assert int(after) <= 2 * pages  # the first round's pages, then the same memory again

    off = {**env, "LEXSEM_KEEP_FREED_MEMORY": "0"}
    done = subprocess.run(
        [sys.executable, "-c", FAULTS], capture_output=True, text=True, env=off, check=True
    )
    before, kept, after, _ = done.stdout.split()
    assert kept == "False" and int(after) >= 15 * pages


@pytest.mark.torch
def test_a_model_loaded_onto_the_cpu_keeps_freed_memory(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    from builders.tiny_dual_models import write_tiny_openclip
    from lexsem.models import lazy
    from lexsem.models.factory import load_model

    calls: list[int] = []
    monkeypatch.setattr(lazy, "keep_freed_memory", lambda: calls.append(1) or True)
    spec = write_tiny_openclip(Path(str(tmp_path)) / "model", "lexsem-host-memory")
    model = load_model(spec, device="cpu")
    assert calls == []  # building a model loads nothing
    model.encode(["a red cube"])
    assert calls  # loading it onto the CPU did

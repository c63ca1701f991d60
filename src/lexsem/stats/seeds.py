"""Bootstrap seeds derived from names, so that a row's confidence interval depends only on the
run's seed and on what the row is (benchmark, task, metric, subset), never on which other
benchmarks, tasks or subsets were selected or in which order.

`bootstrap_seed(seed, *names)` is the first 8 bytes (big-endian) of the sha256 of the seed and
the names, each followed by a NUL byte: stable across processes, platforms and Python versions
(unlike the salted built-in `hash`).
"""

from __future__ import annotations

import hashlib

__all__ = ["bootstrap_seed"]


def bootstrap_seed(seed: int, *names: str) -> int:
    """A 64-bit seed for the resampling of the row named by `names`, from the run's `seed`."""
    h = hashlib.sha256(b"lexsem bootstrap seed v1\x00")
    for part in (str(int(seed)), *names):
        h.update(part.encode("utf-8") + b"\x00")
    return int.from_bytes(h.digest()[:8], "big")

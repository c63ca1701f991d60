"""A tiny text encoder backend for sweep tests and the sweep benchmark, registered as
`sweepfake:` when this module is imported (a grid's `plugins` imports it in every process).

No torch: a process that runs it starts in a fraction of a second. Options:
- `dim`: the vector size (a hashed bag of words, as `builders.fakes.BagOfWordsEncoder`);
- `fail`: 1 raises in `encode` (a failing job);
- `work`: milliseconds of pure-Python CPU work per `encode` call (a CPU-bound job);
- `hang_marker` / `crash_marker`: a path; where it does not exist yet, `encode` creates it and
  then hangs (for a test to kill the sweep) or kills its own process (a Ray worker lost).
  Where it exists, the model runs normally: the rerun of a killed sweep finishes;
- `calls_log`: a path; each `encode` call appends one line (the model's name, its process id
  and the number of texts) there, from whichever process makes it (to count the encoder calls
  of Ray workers).
The markers, `calls_log` and `work` are not part of the fingerprint: they change no value.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lexsem.models.backend_registry import BACKENDS, register_backend
from lexsem.models.options import Option


class SweepFake:
    backend: ClassVar[str] = "sweepfake"
    description = "a bag-of-words text encoder for sweep tests"
    options: ClassVar[dict[str, Option]] = {
        "dim": Option(int, 32),
        "fail": Option(int, 0),
        "work": Option(float, 0.0),
        "hang_marker": Option(str, ""),
        "crash_marker": Option(str, ""),
        "calls_log": Option(str, ""),
    }

    def __init__(self, spec: Any, *, name: str | None = None, **_: Any) -> None:
        self.spec = spec
        self.name = name or f"sweepfake:{spec.name}"
        self.dim = int(spec.get("dim"))

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "sweepfake", "name": self.spec.name, "dim": self.dim}

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"[a-z]+", text.lower()):
            h = hashlib.md5(f"{self.spec.name}:{w}".encode()).hexdigest()
            v[int(h, 16) % self.dim] += 1.0
        return v

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        log = self.spec.get("calls_log")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{self.spec.name} {os.getpid()} {len(texts)}\n")
        _once(self.spec.get("hang_marker"), lambda: time.sleep(600))
        _once(self.spec.get("crash_marker"), lambda: os.kill(os.getpid(), signal.SIGKILL))
        if self.spec.get("fail"):
            raise RuntimeError("sweepfake: told to fail")
        busy(float(self.spec.get("work")))
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim))


def _once(marker: str, act: Any) -> None:
    if marker and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        act()


def busy(ms: float) -> None:
    """Pure-Python work (holds the GIL) for about `ms` milliseconds."""
    end = time.perf_counter() + ms / 1000
    x = 0
    while time.perf_counter() < end:
        for i in range(1000):
            x += i * i


if "sweepfake" not in BACKENDS:
    register_backend("sweepfake", SweepFake)

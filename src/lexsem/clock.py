"""Where a run's wall time goes: named, exclusive spans on the thread that runs it.

`Evaluator.run` starts a `Clock` (`running`); the seams of the engine, the models and the
request store open `span(part)` around their work. Spans nest and are exclusive: time inside
an inner span counts to the inner part only (a tokenizer call inside the text tower's call
counts as tokenisation, a model loaded by its first call as model load), so the parts never
overlap and their sum is at most the wall; what no span covers is "the rest".

Only the thread that started the clock is timed (the critical path of the run): spans opened
on other threads (a store shared with reading threads, chat requests sent concurrently) count
nothing. Work done elsewhere at the same time (images decoded in DataLoader worker
processes while the towers run) is not part of the wall's sum: it is added with `overlapped`,
as seconds of work beside the wall, and the wall's part for it is the time the run waited for
it (`image_decode`).

Without a running clock a span costs one global read: the library's code is timed only
inside a run. Each span costs two `time.perf_counter` calls.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PARTS", "Clock", "count_start_up", "overlapped", "process_age", "running", "span"]

# the parts of a run's wall, in the order a breakdown shows them
PARTS = (
    "start_up",  # process start to the run's start: imports, the command line (CLI runs only)
    "model_load",  # the model's files checked, its weights loaded
    "data",  # the benchmarks loaded
    "image_read",  # image files read and hashed (the scan, in the main process)
    "image_decode",  # waiting for decoded, preprocessed batches (DataLoader)
    "tokenize",  # the tokenizer's calls
    "text_tower",  # the text model's forward (encoder calls less tokenizing and loading)
    "image_tower",  # the image model's forward
    "store",  # the request store: opening, lookups, writes
    "scoring",  # hits, accuracies, bootstrap intervals
)


class Clock:
    """The seconds of each part so far (`spent`), and of work overlapped with the run."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.spent: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self.beside: dict[str, float] = {}  # overlapped work: seconds, not part of the wall
        self._open: list[str] = []
        self._mark = time.perf_counter()

    def enter(self, part: str) -> None:
        now = time.perf_counter()
        if self._open:
            self.spent[self._open[-1]] += now - self._mark
        self._open.append(part)
        self._mark = now

    def leave(self) -> None:
        now = time.perf_counter()
        part = self._open.pop()
        self.spent[part] = self.spent.get(part, 0.0) + now - self._mark
        self._mark = now


_current: Clock | None = None
_start_up_pending = False


class _Span:
    __slots__ = ("clock", "part")

    def __init__(self, part: str) -> None:
        self.part = part
        self.clock: Clock | None = None

    def __enter__(self) -> None:
        clock = _current
        if clock is not None and clock.owner == threading.get_ident():
            self.clock = clock
            clock.enter(self.part)

    def __exit__(self, *exc: object) -> None:
        if self.clock is not None:
            self.clock.leave()
            self.clock = None


def span(part: str) -> Any:
    """A context manager counting its time to `part` of the running clock (if any, and on its
    thread), exclusive of the spans opened inside it."""
    return _Span(part)


def overlapped(name: str, seconds: float) -> None:
    """Add `seconds` of work done beside the run (other processes) to the running clock."""
    clock = _current
    if clock is not None and seconds > 0:
        clock.beside[name] = clock.beside.get(name, 0.0) + seconds


def count_start_up() -> None:
    """Say that the next run started in this process counts the time since the process
    started as its start-up (the CLI: imports and the command line are part of the run)."""
    global _start_up_pending
    _start_up_pending = True


def process_age() -> float | None:
    """Seconds since this process started (Linux: /proc; elsewhere None)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # starttime, field 22
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


@contextmanager
def running() -> Iterator[Clock]:
    """A clock for the run made inside (the previous one, if any, is put back after); its
    `spent["start_up"]` is the process's age when `count_start_up` was called before."""
    global _current, _start_up_pending
    clock, before = Clock(), _current
    if _start_up_pending:
        _start_up_pending = False
        clock.spent["start_up"] = process_age() or 0.0
    _current = clock
    try:
        yield clock
    finally:
        _current = before

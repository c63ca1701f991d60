"""Progress of the engine's long loops (encoding texts, encoding images, scoring), and what a
Ctrl-C leaves behind.

`Progress(label, total, unit=..., enabled=...)` is a context manager the loops advance once per
model batch (`advance`) and tell what they committed to the request store (`saved`):

- on a terminal (stderr is a TTY): a live rich bar, cleared when the loop ends;
- otherwise (piped, redirected to a log, a batch job): one line at the start, one every
  `LINE_INTERVAL_S` seconds of work, and one at the end, e.g.
  `encoding texts: 8,192 / 20,000 texts (41%), 1 min 05 s, about 1 min 33 s left`;
- disabled: nothing is printed, but the counts are kept.

A loop that waits on others (requests to a server) sets `detail` (e.g. `2 answered, 1 failed,
4 retrying`), shown after the counts, and calls `tick()` while it waits, so that a line still
comes every `LINE_INTERVAL_S` when nothing finishes.

A `KeyboardInterrupt` inside the loop leaves it as `Interrupted` (a `KeyboardInterrupt` too),
which says how much of the stage was saved in the request store and that the same command
resumes from there (`Interrupted.message`); `lexsem eval` prints it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

__all__ = ["LINE_INTERVAL_S", "Interrupted", "Progress", "duration", "is_tty", "rich_bar"]

LINE_INTERVAL_S = 15.0  # seconds between two progress lines when stderr is not a terminal


def duration(seconds: float) -> str:
    """`42 s`, `3 min 05 s`, `2 h 07 min`."""
    s = round(max(seconds, 0.0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a stage of the engine: how much of it the request store holds."""

    def __init__(
        self, stage: str, unit: str, *, done: int, saved: int, total: int, store: Path | None
    ) -> None:
        super().__init__(stage)
        self.stage, self.unit, self.total, self.store = stage, unit, total, store
        self.done, self.saved = done, saved

    def message(self) -> str:
        if self.store is None:
            return (
                f"interrupted while {self.stage} ({self.done:,} of {self.total:,} {self.unit} "
                "done); nothing was saved, as the cache is off (--no-cache): a rerun starts over"
            )
        return (
            f"interrupted while {self.stage}: {self.saved:,} of {self.total:,} {self.unit} "
            f"(and everything computed before) are saved in {self.store}; run the same command "
            "again to resume: only what is missing is computed"
        )


class Progress:
    """A stage's progress: a bar on a terminal, periodic lines elsewhere (see the module)."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        unit: str,
        enabled: bool,
        store: Any = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.unit = label, int(total), unit
        self.done = 0  # advanced (computed)
        self.saved_n = 0  # committed to the store
        self.store_path: Path | None = getattr(store, "path", None) if store is not None else None
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._start = self._last = clock()
        self.mode = "off"
        if enabled and self.total > 0:
            self.mode = "bar" if is_tty(self._stream) else "lines"
        self._bar: Any = None
        self._task: Any = None
        self.detail = ""  # shown after the counts: what the loop is waiting on

    # -- the loop's side ---------------------------------------------------------------------------
    def advance(self, n: int) -> None:
        """`n` more units computed (one model batch)."""
        self.done += int(n)
        if self.mode == "bar":
            self._bar.update(self._task, completed=self.done, description=self._label_text())
        elif (
            self.mode == "lines"
            and self.done < self.total  # the last line comes when the stage ends
            and self._clock() - self._last >= LINE_INTERVAL_S
        ):
            self._line()

    def tick(self) -> None:
        """Nothing finished: refresh the bar's detail, or print a line when one is due."""
        if self.mode == "bar":
            self._bar.update(self._task, description=self._label_text())
        elif self.mode == "lines" and self._clock() - self._last >= LINE_INTERVAL_S:
            self._line()

    def _label_text(self) -> str:
        return f"{self.label} ({self.detail})" if self.detail else self.label

    def saved(self, n: int) -> None:
        """`n` more units committed to the request store (a rerun will not compute them)."""
        self.saved_n += int(n)

    # -- context -----------------------------------------------------------------------------------
    def __enter__(self) -> Progress:
        if self.mode == "bar":
            self._bar = rich_bar(self._stream)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        elif self.mode == "lines":
            self._line()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
        if exc_type is None and self.mode == "lines":
            self._line(final=True)
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            raise Interrupted(
                self.label,
                self.unit,
                done=self.done,
                saved=self.saved_n if self.store_path is not None else 0,
                total=self.total,
                store=self.store_path,
            ) from None

    def _line(self, final: bool = False) -> None:
        now = self._clock()
        self._last = now
        spent = now - self._start
        pct = 100.0 * self.done / self.total if self.total else 100.0
        text = f"{self.label}: {self.done:,} / {self.total:,} {self.unit} ({pct:.0f}%)"
        if self.detail:
            text += f", {self.detail}"
        if final:
            text += f" in {duration(spent)}"
        elif self.done:
            left = spent * (self.total - self.done) / self.done
            text += f", {duration(spent)}, about {duration(left)} left"
        print(text, file=self._stream, flush=True)


def is_tty(stream: Any) -> bool:
    """Whether `stream` is a terminal (False for a stream without `isatty` or closed)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def rich_bar(stream: TextIO, *, info: bool = False) -> Any:
    """A transient rich bar on `stream`: the task's description, bar, done / total, (with
    `info`, the task's `info` field,) elapsed and remaining time."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress

    extra = [TextColumn("{task.fields[info]}")] if info else []
    return RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(file=stream),
        transient=True,
    )

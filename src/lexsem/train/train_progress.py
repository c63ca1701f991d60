"""What `lexsem train` shows while it trains: the loss and learning rate of the optimizer
steps, and each epoch's evaluation and validation, as they come.

- on a terminal (stderr is a TTY): a live rich line (step, epoch, loss, learning rate,
  elapsed and remaining time) above which each evaluation is printed;
- otherwise (piped, a log file, a batch job): a line every `every` optimizer steps and at the
  end of each epoch, e.g. `step 40/120 (epoch 1/3): loss 2.0312, lr 1.00e-03, 1 min 05 s`,
  and a line per evaluation, e.g. `epoch-1 evaluation: synthetic/tot 48.2%`;
- disabled (`--quiet`): nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from lexsem.engine.progress_bar import duration, is_tty, rich_bar

__all__ = ["LOG_EVERY", "TrainProgress"]

LOG_EVERY = 10  # optimizer steps between two progress lines when stderr is not a terminal


class TrainProgress:
    """The run's progress (see the module doc); `step`, `evaluation` and `validation` are
    called by the training loop, `close` at its end."""

    def __init__(
        self,
        *,
        total_steps: int,
        epochs: int,
        steps_per_epoch: int,
        enabled: bool = True,
        every: int = LOG_EVERY,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.epochs, self.per_epoch = total_steps, epochs, steps_per_epoch
        self.every = max(1, every)
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._start = clock()
        self._first: int | None = None  # the step this process started from (a resumed run)
        self.mode = "off"
        if enabled:
            self.mode = "bar" if is_tty(self._stream) else "lines"
        self._bar: Any = None
        self._task: Any = None

    # -- the loop's side ---------------------------------------------------------------------------
    def begin(self, step: int, epoch: int) -> None:
        """Training starts (or resumes) at optimizer step `step`, in epoch `epoch` (0-based)."""
        self._first = step
        if self.mode == "off":
            return
        where = f"from step {step:,} (epoch {epoch + 1})" if step else "from the start"
        self._print(
            f"training: {self.total:,} steps, {self.epochs} epochs of {self.per_epoch:,}, {where}"
        )
        if self.mode == "bar":
            self._bar = rich_bar(self._stream, info=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("training", total=self.total, completed=step, info="")

    def step(self, entry: Mapping[str, Any]) -> None:
        """An optimizer step done: `entry` is its row of the loss curve (step, epoch, loss,
        lr)."""
        step, epoch = int(entry["step"]), int(entry["epoch"])
        info = f"loss {entry['loss']:.4f}, lr {entry['lr']:.2e}"
        if self.mode == "bar":
            self._bar.update(self._task, completed=step, info=f"epoch {epoch + 1}/{self.epochs}, "
                             f"{info}")  # fmt: skip
        elif self.mode == "lines":
            end_of_epoch = self.per_epoch and step % self.per_epoch == 0
            if step % self.every == 0 or end_of_epoch or step == self.total:
                self._print(
                    f"step {step:,}/{self.total:,} (epoch {epoch + 1}/{self.epochs}): {info}, "
                    f"{self._spent(step)}"
                )

    def evaluation(self, evaluation: Mapping[str, Any]) -> None:
        """An evaluation done (`before` training or after an epoch): its accuracies."""
        accs = ", ".join(f"{k} {v:.1f}%" for k, v in evaluation.get("accuracy", {}).items())
        self._print(f"{evaluation['label']} evaluation: {accs or 'no accuracy'}")

    def validation(self, validation: Mapping[str, Any]) -> None:
        """An epoch's validation: in-batch accuracy and loss on the validation split."""
        self._print(
            f"{validation['label']} validation: in-batch accuracy "
            f"{100 * validation['in_batch_acc']:.1f}%, loss {validation['loss']:.4f}"
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    # -- output ------------------------------------------------------------------------------------
    def _spent(self, step: int) -> str:
        spent = self._clock() - self._start
        done = step - (self._first or 0)
        if done > 0 and step < self.total:
            return f"{duration(spent)}, about {duration(spent * (self.total - step) / done)} left"
        return duration(spent)

    def _print(self, text: str) -> None:
        if self.mode == "off":
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self._stream, flush=True)

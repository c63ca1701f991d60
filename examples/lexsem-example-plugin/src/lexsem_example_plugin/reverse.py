"""A sweep executor of the example plugin.

`reverse`: the jobs still to run in reverse order, one after another, in this process, each
with an `Evaluator` of its own. The sweep does the rest: it skips the jobs already done,
writes each status as `ctx.report` receives it, and merges the per-job request stores.
"""

from __future__ import annotations

from lexsem.sweep.executors.base import Executor, SweepContext
from lexsem.sweep.grid import Job
from lexsem.sweep.job_run import run_job


class Reverse(Executor):
    """The jobs still to run in reverse order, one after another, in this process."""

    def run(self, jobs: list[Job], ctx: SweepContext) -> None:
        for job in reversed(jobs):
            status = run_job(
                job, ctx.out, stores=ctx.stores, worker=ctx.worker, executor=ctx.executor
            )
            ctx.report(status)  # a job's own error is its `failed` status, never raised


EXECUTOR = Reverse()

"""The `local` executor: the jobs in order, in this process, one `Evaluator` per data
configuration so that the benchmarks and the decoded images stay loaded from job to job (a
job of other settings gets `Evaluator.derive`, which shares them)."""

from __future__ import annotations

from lexsem.config import EvalConfig
from lexsem.evaluator import Evaluator
from lexsem.sweep.executors.base import Executor, SweepContext
from lexsem.sweep.grid import Job
from lexsem.sweep.job_run import run_job

__all__ = ["EXECUTOR", "Local", "data_key", "group_by_data"]

# the settings that decide what an Evaluator loads and keeps: jobs equal in them share one
DATA_FIELDS = (
    "benchmarks",
    "data_dir",
    "cache_dir",
    "offline",
    "coco_val2017",
    "coco_train2017",
    "image_root",
    "max_image_pixels",
    "keep_decoded_mb",
)


def data_key(config: EvalConfig) -> tuple[object, ...]:
    return tuple(getattr(config, f) for f in DATA_FIELDS)


def group_by_data(jobs: list[Job]) -> list[list[Job]]:
    """`jobs` grouped by `data_key`, groups in order of first appearance, jobs in order."""
    groups: dict[tuple[object, ...], list[Job]] = {}
    for job in jobs:
        groups.setdefault(data_key(job.config), []).append(job)
    return list(groups.values())


class Local(Executor):
    """The jobs here, group by group (`group_by_data`), in order within a group."""

    def run(self, jobs: list[Job], ctx: SweepContext) -> None:
        for group in group_by_data(jobs):
            evaluator = Evaluator(group[0].config)
            for job in group:
                ctx.report(
                    run_job(
                        job, ctx.out, stores=ctx.stores, evaluator=evaluator, worker=ctx.worker,
                        executor=ctx.executor,
                    )
                )  # fmt: skip
            del evaluator  # its data and decoded images go before the next group's are loaded


EXECUTOR = Local()

"""Run a table's jobs: `run_jobs(jobs, out, executor)` writes each job's run folder to
`OUT/runs/<job id>/` and returns what became of each job. A job whose run folder is already
there (same id: same spec and settings) is read, not run again; a job that fails is reported
with its error and does not stop the others.

The `local` executor runs the jobs in order in this process, one `Evaluator(config).run(model)`
each. `lexsem sweep`'s executors (`shard`, `ray`) run the same jobs elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lexsem.errors import LexsemError
from lexsem.reproduce.grid import ReproJob
from lexsem.results.run_folder import load_run
from lexsem.results.schema import RunRecord

EXECUTORS = ("local",)
RUNS = "runs"

Echo = Callable[[str], None]


@dataclass(frozen=True)
class JobOutcome:
    """A job's run record, or the error that stopped it; `reused`: read from its folder."""

    job: ReproJob
    record: RunRecord | None = None
    error: str | None = None
    reused: bool = False


def run_folder(out: Path, job: ReproJob) -> Path:
    return out / RUNS / job.id


def run_jobs(
    jobs: Sequence[ReproJob],
    out: str | Path,
    executor: str = "local",
    *,
    echo: Echo = lambda _text: None,
) -> list[JobOutcome]:
    """Run `jobs` not yet done into `out`; one outcome per job, in order."""
    if executor not in EXECUTORS:
        raise LexsemError(f"unknown executor {executor!r}; choose {', '.join(EXECUTORS)}")
    out = Path(out)
    outcomes = []
    for k, job in enumerate(jobs, 1):
        label = f"[{k}/{len(jobs)}] {job.config.name or job.model} on {job.config.benchmarks[0]}"
        folder = run_folder(out, job)
        if (folder / "run.json").is_file():
            try:
                outcomes.append(JobOutcome(job, record=load_run(folder), reused=True))
                echo(f"{label}: done earlier ({folder})")
                continue
            except LexsemError as exc:
                echo(f"{label}: its run folder cannot be read ({exc}); running it again")
        echo(f"{label}: running")
        outcomes.append(_run_local(job, folder))
        if outcomes[-1].error:
            echo(f"{label}: failed: {outcomes[-1].error}")
    return outcomes


def _run_local(job: ReproJob, folder: Path) -> JobOutcome:
    from lexsem.evaluator import Evaluator

    try:
        run = Evaluator(job.config).run(job.model, out=folder, force=True)
    except (LexsemError, ImportError, OSError, RuntimeError, ValueError) as exc:
        return JobOutcome(job, error=" ".join(str(exc).split()) or type(exc).__name__)
    return JobOutcome(job, record=run.record)

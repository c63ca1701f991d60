"""A grid checked whole before any job runs: every model, benchmark, subset and task of it.

`check_jobs` looks at what each job would ask for, without loading weights or data:

- the model spec resolves (`lexsem.models.factory.load_model`, lazy: the backend is
  registered, the alias known, the options valid, a local folder there, a hub id in the cache
  or reachable);
- every benchmark selector names a registered benchmark and subsets it has
  (`lexsem.benchmarks.selectors.parse_selector`; a user's file or a build folder is read);
- the tasks asked for are the benchmark's and the model can run them (the Evaluator's own
  rule, `lexsem.evaluator.select_tasks`, which reads the benchmark's declaration only).

Every mistake is found, each once (a model in twenty jobs is one mistake), and raised as one
`GridError` listing them all with the registries' did-you-mean; `lexsem sweep` (also
`--dry-run`) stops with it before any job starts.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from lexsem.errors import LexsemError
from lexsem.sweep.grid import Job

__all__ = ["GridError", "check_jobs", "grid_mistakes"]


class GridError(LexsemError):
    """A grid with mistakes: `mistakes` lists them, one line each; nothing ran."""

    def __init__(self, mistakes: list[str], source: object = None) -> None:
        self.mistakes = mistakes
        where = f"{source}: " if source is not None else ""
        n = len(mistakes)
        lines = "\n".join(f"  {m}" for m in mistakes)
        super().__init__(
            f"{where}the grid has {n} mistake{'s' * (n != 1)}; no job was run:\n{lines}"
        )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _model(job: Job) -> tuple[Any, str | None]:
    from lexsem.models.factory import load_model

    cfg = job.config
    try:
        return load_model(job.model, device=cfg.device, dtype=cfg.dtype, offline=cfg.offline), None
    except Exception as exc:  # any error building the spec is the grid's mistake
        return None, f"model {job.model!r}: {_one_line(exc)}"


def _benchmark(selector: str) -> tuple[Any, str | None]:
    from lexsem.benchmarks.selectors import parse_selector

    try:
        return parse_selector(selector)[0], None
    except Exception as exc:
        return None, f"benchmark {selector!r}: {_one_line(exc)}"


def _tasks(job: Job, model: Any, bench: Any, selector: str) -> str | None:
    """Why `model` cannot run the job's tasks on `bench`; None when it can."""
    from lexsem.engine.runner import VOTES, capabilities
    from lexsem.evaluator import select_tasks
    from lexsem.models.protocols import describe_missing

    caps = capabilities(model)
    if not caps:
        return f"model {job.model!r}: {_one_line(LexsemError(describe_missing(model)))}"
    if VOTES in caps:  # people's votes: the tasks they answered, known from their file only
        return None
    try:
        # the rule reads the benchmark's declaration (`spec`) only, never its items
        select_tasks(SimpleNamespace(spec=bench), job.config.tasks, caps)  # type: ignore[arg-type]
    except LexsemError as exc:
        return f"model {job.model!r} on {selector!r}: {_one_line(exc)}"
    return None


def grid_mistakes(jobs: list[Job]) -> list[str]:
    """Every mistake of the jobs' models, benchmarks, subsets and tasks, each once, in the
    order of the jobs."""
    mistakes: dict[str, None] = {}
    models: dict[tuple[object, ...], tuple[Any, str | None]] = {}
    benches: dict[str, tuple[Any, str | None]] = {}
    for job in jobs:
        cfg = job.config
        key = (job.model, cfg.device, cfg.dtype, cfg.offline)
        if key not in models:
            models[key] = _model(job)
        model, problem = models[key]
        if problem is not None:
            mistakes.setdefault(problem, None)
        for selector in cfg.benchmarks:
            if selector not in benches:
                benches[selector] = _benchmark(selector)
            bench, bench_problem = benches[selector]
            if bench_problem is not None:
                mistakes.setdefault(bench_problem, None)
            elif model is not None:
                task_problem = _tasks(job, model, bench, selector)
                if task_problem is not None:
                    mistakes.setdefault(task_problem, None)
    return list(mistakes)


def check_jobs(jobs: list[Job], source: object = None) -> None:
    """Raise a `GridError` listing every mistake of `jobs` (`grid_mistakes`); `source`: the
    grid file, named first."""
    mistakes = grid_mistakes(jobs)
    if mistakes:
        raise GridError(mistakes, source)

"""A paper table as a sweep grid, and the jobs it expands to.

The grid has the shape of `lexsem sweep`'s grid file (`name`, `defaults`, `block` = a list of
models × benchmarks with their `options`): one block per (benchmark, tasks) of the table, each
crossing the rows that have cells there with that one benchmark. Each row runs under the name the
paper prints (`EvalConfig.name`), so its run record says which row it is. Rows without a spec
are not in the grid (`lexsem.reproduce.availability` says what they need).

A job is one `Evaluator(config).run(model)` written to `OUT/runs/<id>/`. Its id is a readable
prefix (row name, benchmark) and a digest of the spec and the settings that decide its results
(not the cache folder nor speed settings), so the same job has the same id in every run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lexsem.config import EvalConfig
from lexsem.errors import LexsemError
from lexsem.reproduce.facts import ModelRow, PaperTable

# settings that change where values are kept or how fast a job runs, never its results
EXECUTION_FIELDS = frozenset(
    {"cache_dir", "use_cache", "progress", "num_workers", "keep_decoded_mb", "concurrency"}
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class GridModel(_Strict):
    spec: str = Field(min_length=1)
    name: str | None = None


class GridBlock(_Strict):
    """Models × benchmarks, with the evaluation settings of this block (its tasks)."""

    models: tuple[GridModel, ...] = Field(min_length=1)
    benchmarks: tuple[str, ...] = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)


class ReproGrid(_Strict):
    """A table's grid, in the shape of a `lexsem sweep` grid (`model_dump(by_alias=True)` is a
    valid grid file's content)."""

    name: str
    defaults: dict[str, Any] = Field(default_factory=dict)
    blocks: tuple[GridBlock, ...] = Field(alias="block")


class ReproJob(_Strict):
    """One evaluation: `Evaluator(config).run(model)`, written to `runs/<id>/`."""

    id: str
    model: str
    config: EvalConfig


def runnable_rows(table: PaperTable, only: Sequence[str] | None = None) -> list[ModelRow]:
    """The rows that have a spec (in table order), or those of them named in `only`."""
    rows = [r for r in table.rows if r.spec is not None]
    return [r for r in rows if only is None or r.name in only]


def table_grid(
    table: PaperTable, rows: Sequence[ModelRow], settings: Mapping[str, Any] | None = None
) -> ReproGrid:
    """The grid that runs `rows` of `table` on the benchmarks and tasks of their cells, with
    evaluation `settings` (EvalConfig fields) for every job."""
    blocks: dict[tuple[str, tuple[str, ...]], list[GridModel]] = {}
    for row in rows:
        assert row.spec is not None
        for bench, tasks in _needed(table, row.name).items():
            blocks.setdefault((bench, tasks), []).append(GridModel(spec=row.spec, name=row.name))
    return ReproGrid(
        name=table.name,
        defaults=dict(settings or {}),
        blocks=tuple(
            GridBlock(models=tuple(models), benchmarks=(bench,), options={"tasks": list(tasks)})
            for (bench, tasks), models in blocks.items()
        ),
    )


def _needed(table: PaperTable, model: str) -> dict[str, tuple[str, ...]]:
    """benchmark -> the tasks a row's cells need there, in cell order."""
    out: dict[str, dict[str, None]] = {}
    for cell in table.cells_of(model):
        out.setdefault(cell.column.benchmark, {})[cell.column.task] = None
    return {b: tuple(tasks) for b, tasks in out.items()}


def expand(grid: ReproGrid) -> list[ReproJob]:
    """The grid's jobs in order (block, model, benchmark), each once."""
    jobs: dict[str, ReproJob] = {}
    for block in grid.blocks:
        for model in block.models:
            for bench in block.benchmarks:
                settings = {**grid.defaults, **block.options}
                try:
                    config = EvalConfig(benchmarks=(bench,), name=model.name, **settings)
                except ValidationError as exc:
                    e = exc.errors()[0]
                    field = ".".join(str(p) for p in e["loc"]) or "settings"
                    raise LexsemError(
                        f"{grid.name}: {model.name or model.spec}: {field}: "
                        f"{e['msg'].removeprefix('Value error, ')}"
                    ) from None
                job = ReproJob(id=job_id(model.spec, config), model=model.spec, config=config)
                jobs.setdefault(job.id, job)
    return list(jobs.values())


def _slug(text: str, limit: int = 40) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:limit].strip("-") or "x"


def job_id(model: str, config: EvalConfig) -> str:
    """`<name>__<benchmarks>__<digest>`: the digest of the spec and the settings that decide
    the results."""
    settings = config.model_dump(mode="json", exclude=set(EXECUTION_FIELDS))
    blob = json.dumps({"model": model, "config": settings}, sort_keys=True)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:12]
    benches = "+".join(_slug(b.partition("/")[0], 20) for b in config.benchmarks)
    return f"{_slug(config.name or model)}__{benches[:60]}__{digest}"

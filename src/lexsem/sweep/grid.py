"""A sweep's grid: models × benchmarks × options, and the jobs it expands to.

A grid file (TOML, or YAML with the same keys) names model groups once and crosses them with
benchmarks and evaluation settings in blocks; every combination is one job — one
`Evaluator(config).run(model)`, one run folder:

    name = "text-models"               # optional
    max_jobs = 200                     # optional bound (refused beyond it; at most 100000)
    plugins = ["my_package.backends"]  # optional: modules imported in every process first

    [defaults]                         # EvalConfig fields of every job
    n_boot = 1000

    [groups]                           # named model groups
    text = ["minilm", "hf:bert-base-uncased"]
    big = [{ spec = "st:intfloat/e5-large-v2", name = "E5", resources = { num_gpus = 1 } }]

    [[block]]
    groups = ["text", "big"]           # group names ...
    models = ["st:BAAI/bge-small-en"]  # ... and/or specs
    benchmarks = ["sugarcrepe_pp", ["visla_generic", "visla_spatial"]]  # a list: one job
    options = { tasks = ["tot"] }      # EvalConfig fields of this block
    vary = { tie_policy = ["strict", "lenient"] }   # crossed: one job per value
    resources = { num_cpus = 2 }       # what each job declares (Ray schedules by it)

A job's settings are, later winning: `defaults`, the block's `options`, the model entry's
`options`, one value of each `vary` field. Its id is a readable prefix (model, benchmarks)
and a digest of the model spec and the settings that decide its results (not where the cache
lies nor how fast it runs: `EXECUTION_FIELDS`), so the same job has the same id on every
machine and in every run of the sweep. The same job reached twice (a model in two groups)
runs once.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lexsem.config import EvalConfig
from lexsem.config_file import read_config_file, validate_config
from lexsem.digests import json_sha256
from lexsem.errors import LexsemError
from lexsem.registry import did_you_mean

__all__ = [
    "EXECUTION_FIELDS",
    "HARD_MAX_JOBS",
    "MAX_SPREAD",
    "Block",
    "Grid",
    "Job",
    "ModelEntry",
    "Resources",
    "expand",
    "load_grid",
]

HARD_MAX_JOBS = 100_000  # the largest `max_jobs` a grid may set
MAX_SPREAD = 1024  # the most Ray actors one job's encoding may be spread over
# settings that change where values are kept or how fast a job runs, never its results: left
# out of a job's id and of the "already done" comparison
EXECUTION_FIELDS = frozenset(
    {"cache_dir", "use_cache", "progress", "num_workers", "keep_decoded_mb", "concurrency"}
)
_SET_BY_GRID = frozenset({"benchmarks", "name"})  # a block's benchmarks, a model entry's name
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*$", re.I)
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Resources(_Strict):
    """What one job needs of a worker; the Ray executor schedules by it. With `spread` > 1
    the job's text and image encoding runs in that many Ray actors, each with these resources
    (`lexsem.sweep.spread`)."""

    num_cpus: float = Field(1.0, ge=0, le=4096)
    num_gpus: float = Field(0.0, ge=0, le=1024)
    memory: int | None = Field(None, ge=1, description="Bytes (or a size: '8GiB', '500MB').")
    spread: int = Field(1, ge=1, le=MAX_SPREAD, description="Ray actors encoding the job.")

    @field_validator("memory", mode="before")
    @classmethod
    def _size(cls, value: object) -> object:
        if isinstance(value, str):
            m = _SIZE.match(value)
            if m is None:
                raise ValueError(f"{value!r} is not a size (e.g. 8GiB, 500MB, 1000000)")
            return int(float(m.group(1)) * _UNITS[(m.group(2) or "B").upper()])
        return value


def _settings(value: dict[str, Any]) -> dict[str, Any]:
    """Evaluation settings of a grid: EvalConfig fields only, without those the grid sets."""
    for key in value:
        if key in _SET_BY_GRID:
            where = "a block's benchmarks" if key == "benchmarks" else "a model entry's name"
            raise ValueError(f"{key!r} is set by {where}, not as an option")
        if key not in EvalConfig.model_fields:
            raise ValueError(
                f"unknown evaluation setting {key!r}"
                f"{did_you_mean(key, list(EvalConfig.model_fields))}"
            )
    return value


class ModelEntry(_Strict):
    """One model of a group or block: its spec, and optionally its display name, settings
    and resources."""

    spec: str = Field(min_length=1)
    name: str | None = Field(None, min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)
    resources: Resources | None = None

    _options = field_validator("options")(_settings)


Model = str | ModelEntry


class Block(_Strict):
    """Models (by group or spec) × benchmarks × the values of `vary`."""

    groups: list[str] = Field(default_factory=list)
    models: list[Model] = Field(default_factory=list)
    benchmarks: list[str | list[str]] = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)
    vary: dict[str, list[Any]] = Field(default_factory=dict)
    resources: Resources | None = None

    _options = field_validator("options")(_settings)

    @field_validator("vary")
    @classmethod
    def _axes(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        _settings(value)
        empty = [k for k, v in value.items() if not v]
        if empty:
            raise ValueError(f"vary.{empty[0]} has no value: give at least one")
        return value


class Grid(_Strict):
    """A sweep's grid (see the module doc); built from a file by `load_grid` or in Python."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = None
    max_jobs: int = Field(1000, ge=1, le=HARD_MAX_JOBS)
    plugins: list[str] = Field(default_factory=list)
    defaults: dict[str, Any] = Field(default_factory=dict)
    groups: dict[str, list[Model]] = Field(default_factory=dict)
    blocks: list[Block] = Field(min_length=1, alias="block")
    resources: Resources = Field(default_factory=Resources)

    _defaults = field_validator("defaults")(_settings)

    @field_validator("groups")
    @classmethod
    def _groups(cls, value: dict[str, list[Model]]) -> dict[str, list[Model]]:
        empty = [k for k, v in value.items() if not v]
        if empty:
            raise ValueError(f"group {empty[0]!r} has no model")
        return value


class Job(_Strict):
    """One evaluation of a sweep: `Evaluator(config).run(model)`, written to `runs/<id>/`."""

    id: str
    model: str
    config: EvalConfig
    resources: Resources = Field(default_factory=Resources)
    plugins: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.config.name or self.model} on {', '.join(self.config.benchmarks)}"


def load_grid(path: str | Path) -> Grid:
    """The grid of the TOML (or `.yaml`/`.yml`) file `path`, checked whole
    (`lexsem.config_file`): a problem is one `LexsemError` line naming the file and the key."""
    file = read_config_file(path, what="grid file")
    grid = validate_config(file, Grid, numbered={k: ("block", None) for k in ("block", "blocks")})
    expand(grid, source=file.path)  # every job's settings checked, the size bounded
    return grid


# -- expansion ----------------------------------------------------------------------------------
def _entry(model: Model) -> ModelEntry:
    return ModelEntry(spec=model) if isinstance(model, str) else model


def _models(grid: Grid, block: Block, where: str) -> list[ModelEntry]:
    out: list[ModelEntry] = []
    for g in block.groups:
        if g not in grid.groups:
            known = ", ".join(sorted(grid.groups)) or "none"
            raise LexsemError(
                f"{where}: groups: no model group {g!r}{did_you_mean(g, list(grid.groups))} "
                f"(groups: {known})"
            )
        out += [_entry(m) for m in grid.groups[g]]
    out += [_entry(m) for m in block.models]
    if not out:
        raise LexsemError(f"{where}: no model: give `models` or `groups`")
    return out


def _combinations(vary: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    keys = list(vary)
    for values in itertools.product(*(vary[k] for k in keys)):
        yield dict(zip(keys, values, strict=True))


def _slug(text: str, limit: int = 40) -> str:
    text = text.rsplit("/", 1)[-1] if "/" in text and ":" in text else text
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:limit].strip("-") or "x"


def job_id(model: str, config: EvalConfig, varied: dict[str, Any] | None = None) -> str:
    """`<model>__<benchmarks and subsets>[__<key>=<value>,...]__<digest>`: readable parts (the
    values of the block's `vary` fields) and the digest of the spec and the settings that
    decide the results (`EXECUTION_FIELDS` left out), which alone makes it unique."""
    settings = config.model_dump(mode="json", exclude=set(EXECUTION_FIELDS))
    digest = json_sha256({"model": model, "config": settings}, nan=True, layout="python")[:12]
    benches = "+".join(_slug(b, 30) for b in config.benchmarks)
    values = ",".join(f"{k}={_slug(str(v), 20)}" for k, v in (varied or {}).items())
    parts = [_slug(config.name or model), benches[:60]] + ([values[:60]] if values else [])
    return "__".join([*parts, digest])


def _size(grid: Grid) -> int:
    n = 0
    for block in grid.blocks:
        n_models = sum(len(grid.groups.get(g, ())) for g in block.groups) + len(block.models)
        n_vary = 1
        for values in block.vary.values():
            n_vary *= len(values)
        n += n_models * len(block.benchmarks) * n_vary
    return n


def expand(grid: Grid, *, source: str | Path | None = None) -> list[Job]:
    """The jobs of `grid`, in grid order (block, model, benchmark, vary), each once. A grid of
    more than `max_jobs` jobs, or a job whose settings are invalid, is a `LexsemError` naming
    `source` (the grid file) and the block."""
    prefix = f"{source}: " if source is not None else ""
    size = _size(grid)
    if size > grid.max_jobs:
        raise LexsemError(
            f"{prefix}the grid expands to {size} jobs, more than max_jobs = {grid.max_jobs} "
            f"(raise max_jobs, at most {HARD_MAX_JOBS}, or split the grid)"
        )
    jobs: dict[str, Job] = {}
    for b_i, block in enumerate(grid.blocks, 1):
        where = f"{prefix}block {b_i}"
        for entry in _models(grid, block, where):
            for benches in block.benchmarks:
                selection = [benches] if isinstance(benches, str) else list(benches)
                for combo in _combinations(block.vary):
                    settings = {**grid.defaults, **block.options, **entry.options, **combo}
                    config = _config(where, entry, selection, settings)
                    job = Job(
                        id=job_id(entry.spec, config, combo),
                        model=entry.spec,
                        config=config,
                        resources=entry.resources or block.resources or grid.resources,
                        plugins=tuple(grid.plugins),
                    )
                    if job.resources.spread > 1 and not config.use_cache:
                        raise LexsemError(
                            f"{where}: model {entry.spec!r}: resources.spread needs the request "
                            "store (use_cache = true): the workers' results are kept there"
                        )
                    jobs.setdefault(job.id, job)
    return list(jobs.values())


def _config(where: str, entry: ModelEntry, benchmarks: list[str], settings: dict) -> EvalConfig:
    try:
        return EvalConfig(benchmarks=benchmarks, name=entry.name, **settings)
    except ValidationError as exc:
        e = exc.errors()[0]
        field = ".".join(str(p) for p in e["loc"]) or "settings"
        msg = e["msg"].removeprefix("Value error, ")
        raise LexsemError(f"{where}: model {entry.spec!r}: {field}: {msg}") from None

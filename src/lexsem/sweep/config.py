"""`SweepConfig`: how a sweep runs its grid's jobs (the executor, the Ray cluster, the shard,
retries, request stores, spread), each field with its default, description and bounds. The
options of `lexsem sweep` and `lexsem reproduce` are made from these fields
(`lexsem.cli.options.config_option`), and its fields are `run_sweep`'s keyword arguments
(`run_sweep(grid, out, **config.model_dump())`), so the CLI and the Python API cannot
disagree (`tests/test_cli_options.py`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lexsem.sweep.grid import MAX_SPREAD

__all__ = ["SweepConfig"]


class SweepConfig(BaseModel):
    """How a sweep runs; every field has the CLI's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: str = Field(
        "local",
        description="local (in order, here), shard (this process's slice: torchrun, SLURM "
        "array), ray (one task per job), or one a grid's plugin registers (checked once the "
        "grid's plugins are imported, before any job runs).",
    )
    stores: Literal["shared", "per-job"] | None = Field(
        None,
        description="shared (every job writes the main request store) or per-job (a store per "
        "job on local disk, merged into the main one); default: per-job on Ray, else shared.",
    )
    address: str | None = Field(
        None,
        description="Ray: the cluster to use (ray://HOST:10001, auto); default: a local one.",
    )
    rank: int | None = Field(
        None, ge=0, description="shard: this process's rank (default: from the environment)."
    )
    world_size: int | None = Field(
        None, ge=1, description="shard: the number of shards (default: from the environment)."
    )
    max_retries: int = Field(
        3, ge=0, le=100, description="Ray: times a job is retried when its worker is lost."
    )
    extend: bool = Field(
        False,
        description="Add this grid's jobs to the sweep of another grid that the folder holds "
        "(without it, a folder holds one grid).",
    )
    spread: int | None = Field(
        None,
        ge=1,
        le=MAX_SPREAD,
        description="Spread each job's text and image encoding over this many Ray actors "
        "(default: each job's resources.spread; results as one process; needs --executor ray, "
        "1 runs every job in one process).",
    )

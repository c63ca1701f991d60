"""The sweep's executors, one file each, behind one interface (`base.Executor`): `local` (in
order, in this process), `shard` (this process's slice of the jobs: torchrun, a SLURM array)
and `ray` (one Ray task per job), registered by name in `catalog.EXECUTORS`."""

from __future__ import annotations

from lexsem.sweep.executors.catalog import EXECUTORS, get_executor

__all__ = ["EXECUTORS", "get_executor"]

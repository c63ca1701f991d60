"""The `shard` executor: this process runs its slice of the jobs — a contiguous block of the
jobs in their data-grouped order, so a shard loads few benchmarks — as the `local` executor
does. Rank and world size come from explicit flags, else torchrun's `RANK` / `WORLD_SIZE`,
else a SLURM array (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`,
`SLURM_ARRAY_TASK_COUNT`), else `srun`'s `SLURM_PROCID` / `SLURM_NTASKS`. The slices depend
on the grid only, never on what is done, so every shard agrees on them whenever it starts."""

from __future__ import annotations

import os
from collections.abc import Mapping

from lexsem.errors import LexsemError
from lexsem.sweep.executors.base import SweepContext
from lexsem.sweep.executors.local import Local, group_by_data
from lexsem.sweep.grid import Job

__all__ = ["EXECUTOR", "Shard", "rank_and_world", "shard_slice"]

_SOURCES = (
    ("RANK", "WORLD_SIZE", None),
    ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"),
    ("SLURM_PROCID", "SLURM_NTASKS", None),
)


def _int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise LexsemError(f"${name} = {value!r}: not a whole number") from None


def rank_and_world(
    rank: int | None = None, world: int | None = None, env: Mapping[str, str] | None = None
) -> tuple[int, int]:
    """(rank, world size) from the flags, else the environment (see the module doc)."""
    env = os.environ if env is None else env
    if rank is None and world is None:
        for r_name, w_name, min_name in _SOURCES:
            if r_name in env and w_name in env:
                rank, world = _int(r_name, env[r_name]), _int(w_name, env[w_name])
                if min_name is not None and min_name in env:
                    rank -= _int(min_name, env[min_name])
                break
        else:
            raise LexsemError(
                "the shard executor needs its rank and the world size: give --rank and "
                "--world-size, or run under torchrun (RANK, WORLD_SIZE) or a SLURM array"
            )
    if rank is None or world is None:
        raise LexsemError("give both --rank and --world-size")
    if world < 1 or not 0 <= rank < world:
        raise LexsemError(f"rank {rank} of world size {world}: need 0 <= rank < world size")
    return rank, world


def shard_slice(jobs: list[Job], rank: int, world: int) -> list[Job]:
    """The jobs shard `rank` of `world` runs: its contiguous block of the grouped order."""
    ordered = [job for group in group_by_data(jobs) for job in group]
    n = len(ordered)
    return ordered[rank * n // world : (rank + 1) * n // world]


class Shard(Local):
    """This process's slice of the jobs, run as `local` runs them; its per-job stores are
    left in `OUT/stores/` for a final `local` run of the sweep to merge."""

    partial = True

    def select(self, jobs: list[Job], ctx: SweepContext) -> tuple[list[Job], SweepContext]:
        rank, world = rank_and_world(ctx.rank, ctx.world_size)
        return shard_slice(jobs, rank, world), ctx.replace(rank=rank, world_size=world)


EXECUTOR = Shard()

"""The sweep's executors, one file each: `local` (in order, in this process), `shard` (this
process's slice of the jobs: torchrun, a SLURM array) and `ray` (one Ray task per job).

Each takes the jobs still to run and a `report` callback that records each job's status as it
finishes; `lexsem.sweep.runner` skips the jobs already done and merges the stores."""

from __future__ import annotations

from collections.abc import Callable

from lexsem.sweep.record import JobStatus

Report = Callable[[JobStatus], None]
EXECUTORS = ("local", "shard", "ray")

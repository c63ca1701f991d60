"""The executor registry: name -> `Executor`, lazy entries (an executor's module, Ray's
included, is imported when it is first asked for)."""

from __future__ import annotations

from lexsem.registry import Registry
from lexsem.sweep.executors.base import Executor

__all__ = ["EXECUTORS", "get_executor"]


EXECUTORS: Registry[Executor] = Registry(
    "executor",
    Executor,
    {name: f"lexsem.sweep.executors.{name}:EXECUTOR" for name in ("local", "shard", "ray")},
)


def get_executor(name: str) -> Executor:
    return EXECUTORS.get(name)

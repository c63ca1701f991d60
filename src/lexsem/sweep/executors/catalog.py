"""The executor registry: name -> `Executor`, lazy entries (an executor's module, Ray's
included, is imported when it is first asked for)."""

from __future__ import annotations

from lexsem.registry import Registry
from lexsem.sweep.executors.base import Executor

__all__ = ["EXECUTORS", "get_executor"]


def _check(obj: object) -> Executor:
    if not isinstance(obj, Executor):
        raise TypeError(f"an executor entry must be an Executor, got {type(obj).__name__}")
    return obj


EXECUTORS: Registry[Executor] = Registry("executor", _check)
for _name in ("local", "shard", "ray"):
    EXECUTORS.add(_name, f"lexsem.sweep.executors.{_name}:EXECUTOR")


def get_executor(name: str) -> Executor:
    return EXECUTORS.get(name)

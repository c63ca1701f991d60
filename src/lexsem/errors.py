"""Exceptions shared by every layer. Each message names what is wrong and where."""

from __future__ import annotations

from pathlib import Path


class LexsemError(Exception):
    """Base class: an error a user can act on (the CLI prints it without a traceback)."""


class DataError(LexsemError):
    """A benchmark file or item is unusable. Names the file and, when known, the line/row/item
    (`detail`: the message without them, for a caller saying what the file was to be)."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        item: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.item = item
        self.detail = message
        where = []
        if self.file is not None:
            where.append(self.file if line is None else f"{self.file}:{line}")
        if item is not None:
            where.append(f"item {item}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{message}")


class DownloadError(LexsemError):
    """A file could not be fetched or failed its checksum."""


class ModelError(LexsemError):
    """A model spec cannot be parsed or the model cannot be loaded."""


class CacheError(LexsemError):
    """The embedding cache cannot be used."""


class RetryableError(Exception):
    """A request that failed in a way worth another attempt (rate limit, server error,
    time-out, a broken answer); not a user error: the engine retries it, then reports it."""


class ConnectionFailed(RetryableError):
    """No connection to the server at all (refused, no such host): the engine stops the run when
    this happens before any request was answered (`lexsem.engine.chat`), retries it after."""


class DataWarning(UserWarning):
    """The data is usable but not what it claims to be: a partial snapshot, an empty subset or
    rows left out (`lexsem.benchmarks.checks`; recorded in the run as a notice)."""

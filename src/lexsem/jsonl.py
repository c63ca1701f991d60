"""The one JSON Lines reader: one JSON value per line, UTF-8, blank lines skipped.

Every problem is a one-line `DataError` naming the file and the line (``answers.jsonl:3: ...``):
a file that cannot be read, bytes that are not UTF-8, a line that is not JSON, a line longer
than `MAX_LINE_BYTES` (refused before it is held whole in memory) and a value nested deeper
than `MAX_DEPTH` (refused before it is parsed, so no reader or later walk of the value ever
recurses that deep).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from lexsem.errors import DataError

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "read_jsonl"]

MAX_LINE_BYTES = 16 * 1024 * 1024  # one record per line: 16 MiB is far beyond any real one
MAX_DEPTH = 100  # arrays and objects inside each other

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes included
_BRACKET = re.compile(r"[\[\]{}]")


def read_jsonl(
    path: str | Path, *, max_line_bytes: int = MAX_LINE_BYTES, max_depth: int = MAX_DEPTH
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of the JSON Lines file at `path`, lines
    numbered from 1 (see the module doc for the errors)."""
    try:
        with open(path, "rb") as fh:
            yield from _lines(fh, path, max_line_bytes, max_depth)
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror or exc}", file=path) from None


def _lines(
    fh: BinaryIO, path: str | Path, max_line_bytes: int, max_depth: int
) -> Iterator[tuple[int, Any]]:
    n = 0
    while raw := fh.readline(max_line_bytes + 1):
        n += 1
        if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
            raise DataError(
                f"a line longer than {max_line_bytes} bytes (JSON Lines: one record per line)",
                file=path,
                line=n,
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                file=path,
                line=n,
            ) from None
        if text.strip():
            yield n, _parse(text.rstrip("\r\n"), max_depth, path, n)


def _parse(text: str, max_depth: int, path: str | Path, line: int) -> Any:
    too_deep = DataError(f"JSON nested more than {max_depth} deep", file=path, line=line)
    if text.count("[") + text.count("{") > max_depth and _depth(text) > max_depth:
        raise too_deep
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON ({exc.msg}, column {exc.colno})", file=path, line=line
        ) from None
    except RecursionError:
        raise too_deep from None


def _depth(text: str) -> int:
    """How deep the arrays and objects of `text` nest (brackets inside strings left out)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest

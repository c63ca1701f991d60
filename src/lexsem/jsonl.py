"""The JSON readers: `read_jsonl` (JSON Lines: one JSON value per line, UTF-8, blank lines
skipped) and `read_json` (a whole file holding one JSON value, UTF-8, a BOM allowed): the JSON
files lexsem reads (benchmark files, answers, published answers, build inputs and sources, run
folders' run.json, training runs' train.json, sweeps' sweep.json, builds' build.json, Label
Studio exports and keys, model folders' JSON files) are read through one of the two
(`tests/test_design_claims.py::test_one_json_file_reader`); `read_text` is the UTF-8 text they
read (the benchmark loaders' JSON and TSV files too).

Every problem is a one-line `DataError` naming the file and the line (``answers.jsonl:3: ...``):
a file that cannot be read, bytes that are not UTF-8, text that is not JSON, a JSON Lines line
longer than `MAX_LINE_BYTES` (refused before it is held whole in memory) and a value nested
deeper than `MAX_DEPTH` (refused before it is parsed, so no reader or later walk of the value
ever recurses that deep). `check_depth` is that depth check, for a reader of JSON text of its
own (the fake LLM server's request bodies).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from lexsem.errors import DataError

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "check_depth", "read_json", "read_jsonl", "read_text"]

MAX_LINE_BYTES = 16 * 1024 * 1024  # one record per line: 16 MiB is far beyond any real one
MAX_DEPTH = 100  # arrays and objects inside each other

_STRUCTURE = b'[]{}"\\'  # the bytes `_too_deep` looks at


def read_jsonl(
    path: str | Path,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_depth: int = MAX_DEPTH,
    data: bytes | None = None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    on_error: Callable[[DataError], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of the JSON Lines file at `path`, lines
    numbered from 1, a BOM allowed before the first (see the module doc for the errors).

    `data`: the file's bytes, already read (a reader that also hashes them parses what it
    hashed); `path` then only names the file in errors. `object_pairs_hook`: as `json.loads`'s;
    a `ValueError` it raises is a `DataError` with its message, naming the file and line.
    `on_error`: a bad line (not UTF-8, not JSON, too long, too deep) is given to it as its
    `DataError` and skipped, instead of raised (a cache that a killed run may have left with a
    torn line)."""
    try:
        with io.BytesIO(data) if data is not None else open(path, "rb") as fh:
            yield from _lines(fh, path, max_line_bytes, max_depth, object_pairs_hook, on_error)
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror or exc}", file=path) from None


def _lines(
    fh: BinaryIO,
    path: str | Path,
    max_line_bytes: int,
    max_depth: int,
    hook: Callable[[list[tuple[str, Any]]], Any] | None,
    on_error: Callable[[DataError], None] | None,
) -> Iterator[tuple[int, Any]]:
    n = 0
    while raw := fh.readline(max_line_bytes + 1):
        n += 1
        try:
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                while on_error and (rest := fh.readline(max_line_bytes + 1)):
                    if rest.endswith(b"\n"):  # the rest of the line, unread, skipped with it
                        break
                raise DataError(
                    f"a line longer than {max_line_bytes} bytes (JSON Lines: one record per line)",
                    file=path,
                    line=n,
                )
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                    file=path,
                    line=n,
                ) from None
            if text.strip():
                yield n, _parse(text.rstrip("\r\n"), max_depth, path, n, hook)
        except DataError as exc:
            if on_error is None:
                raise
            on_error(exc)


def read_text(path: str | Path) -> str:
    """The text of the UTF-8 file at `path` (a BOM is accepted); a file that cannot be read, or
    undecodable bytes (named by their line and column), a `DataError`."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror or exc}", file=path) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {col})", file=path, line=line
        ) from None


def read_json(
    path: str | Path,
    *,
    max_depth: int = MAX_DEPTH,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    what: str | None = None,
) -> Any:
    """The JSON value that the whole file at `path` holds (see the module doc for the errors;
    text that is not JSON: ``malformed JSON`` with its line and column; a second value after
    the first, as in a JSON Lines file: the line where it starts). An exception that
    `object_pairs_hook` raises is the caller's, as it is. `what`: what the file was to be,
    said by each error (``train.json: not a readable training record (malformed JSON: ...)``
    for ``what="a readable training record"``)."""
    try:
        return _read_json(path, max_depth, object_pairs_hook)
    except DataError as exc:
        if what is None:
            raise
        raise DataError(f"not {what} ({exc.detail})", file=path, line=exc.line) from None


def _read_json(
    path: str | Path,
    max_depth: int,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
) -> Any:
    text = read_text(path)
    check_depth(text, path, max_depth=max_depth)
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one whole value, then another: JSON Lines, not one document
            raise DataError(
                f"one JSON document expected, but another value starts at line {exc.lineno}: "
                "a JSON Lines file (one value a line)?",
                file=path,
                line=exc.lineno,
            ) from None
        raise DataError(
            f"malformed JSON: {exc.msg} (column {exc.colno}); the file may be truncated",
            file=path,
            line=exc.lineno,
        ) from None
    except RecursionError:
        raise _too_deep_error(path, None, max_depth) from None


def check_depth(
    text: str, path: str | Path, line: int | None = None, *, max_depth: int = MAX_DEPTH
) -> None:
    """A `DataError` naming `path` (and `line`, where given) if the arrays and objects of the
    JSON `text` nest deeper than `max_depth`: call it before parsing `text`."""
    if _too_deep(text, max_depth):
        raise _too_deep_error(path, line, max_depth)


def _too_deep_error(path: str | Path, line: int | None, max_depth: int) -> DataError:
    return DataError(f"JSON nested more than {max_depth} deep", file=path, line=line)


def _parse(
    text: str,
    max_depth: int,
    path: str | Path,
    line: int,
    hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    check_depth(text, path, line, max_depth=max_depth)
    try:
        return json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"not valid JSON ({exc.msg}, column {exc.colno})", file=path, line=line
        ) from None
    except RecursionError:
        raise _too_deep_error(path, line, max_depth) from None
    except ValueError as exc:  # the hook's
        raise DataError(str(exc), file=path, line=line) from None


def _too_deep(text: str, max_depth: int) -> bool:
    """Whether the arrays and objects of `text` nest deeper than `max_depth` (brackets inside
    strings left out). Only the brackets, quotes and backslashes are looked at, with numpy (a
    whole file can be large): a quote opens or closes a string unless an odd run of
    backslashes right before it escapes it."""
    if text.count("[") + text.count("{") <= max_depth:
        return False
    import numpy as np

    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    looked_at = np.zeros(256, dtype=bool)
    looked_at[list(_STRUCTURE)] = True
    where = np.flatnonzero(looked_at[data])
    chars = data[where]
    backslash = chars == ord("\\")
    after_backslash = np.zeros(len(where), dtype=bool)  # right after a backslash
    after_backslash[1:] = (np.diff(where) == 1) & backslash[:-1]
    index = np.arange(len(where))
    run_start = np.maximum.accumulate(np.where(backslash & ~after_backslash, index, 0))
    odd_run = backslash & ((index - run_start) % 2 == 0)  # ends an odd run of backslashes
    escaped = np.zeros(len(where), dtype=bool)
    escaped[1:] = after_backslash[1:] & odd_run[:-1]
    quote = (chars == ord('"')) & ~escaped
    outside = np.cumsum(quote) % 2 == 0
    opening = outside & ((chars == ord("[")) | (chars == ord("{")))
    closing = outside & ((chars == ord("]")) | (chars == ord("}")))
    steps = opening.astype(np.int64) - closing.astype(np.int64)
    return bool(len(steps)) and int(np.cumsum(steps).max()) > max_depth

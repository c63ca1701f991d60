"""A recipe's input as the first table of a build: a file (JSON Lines, Parquet or CSV) or a
built-in source (`lexsem.construct.catalog.SOURCES`), with its sha256 recorded in build.json.

Provenance: a file without a ``source`` column gets the file's name; without ``source_id``, its
``id`` column as text, else the row's number (1-based, the line of a JSON Lines file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.construct.catalog import SOURCES
from lexsem.digests import file_sha256
from lexsem.errors import DataError
from lexsem.jsonl import read_jsonl

__all__ = ["InputTable", "read_input"]

FILE_SUFFIXES = (".jsonl", ".parquet", ".csv")


@dataclass(frozen=True)
class InputTable:
    """The input rows, the sha256 of what they were read from, and what that was."""

    rows: Any  # pyarrow.Table
    sha256: str
    described: str


def read_input(path: Path | None, source: str | None, settings: dict[str, Any]) -> InputTable:
    """The input of a recipe: the file `path`, or the built-in `source` with `settings`."""
    if source is not None:
        table: InputTable = SOURCES.get(source)(**settings)
        return table
    assert path is not None
    table = _read_file(path)
    return InputTable(with_provenance(table, path.name), file_sha256(path), str(path))


def _read_file(path: Path) -> Any:
    import pyarrow as pa

    if not path.is_file():
        raise DataError(f"{path}: no such input file")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    if suffix == ".csv":
        import pyarrow.csv as pcsv

        return pcsv.read_csv(path)
    rows = []
    for n, row in read_jsonl(path):
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {n}: a JSON object per line, not {row!r:.40}")
        if "id" not in row:  # the line number; else `with_provenance` takes the id
            row.setdefault("source_id", str(n))
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: no rows")
    return pa.Table.from_pylist(rows)


def with_provenance(table: Any, source: str) -> Any:
    """`table` with ``source`` and ``source_id`` columns (see the module doc)."""
    import pyarrow as pa

    if "source_id" not in table.column_names:
        if "id" in table.column_names:
            ids = [str(v) for v in table["id"].to_pylist()]
        else:
            ids = [str(i) for i in range(1, table.num_rows + 1)]
        table = table.append_column("source_id", pa.array(ids, pa.string()))
    elif not pa.types.is_string(table.schema.field("source_id").type):
        ids = [str(v) for v in table["source_id"].to_pylist()]
        table = table.set_column(
            table.column_names.index("source_id"), "source_id", pa.array(ids, pa.string())
        )
    if "source" not in table.column_names:
        table = table.append_column("source", pa.array([source] * table.num_rows, pa.string()))
    return table

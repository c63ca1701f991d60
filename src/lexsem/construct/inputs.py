"""A recipe's input as the first table of a build: a file (JSON Lines, Parquet, CSV, or a
benchmark file in lexsem's JSON formats, as `lexsem explore` exports one) or a
built-in source (`lexsem.construct.catalog.SOURCES`), with its sha256 recorded in build.json.

Provenance: a file without a ``source`` column gets the file's name; without ``source_id``, its
``id`` column as text, else the row's number (1-based, the line of a JSON Lines file).

An input that cannot be read (a damaged Parquet or CSV file, a JSON Lines line that is not
JSON) or that holds no rows (an empty file, a source's file without one record) is a one-line
`DataError` naming it, before any stage runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.construct.catalog import SOURCES
from lexsem.digests import file_sha256
from lexsem.errors import DataError
from lexsem.jsonl import read_json, read_jsonl

__all__ = ["InputTable", "read_input"]

FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


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
        if table.rows.num_rows == 0:
            raise DataError(f"{table.described}: no rows (the input source {source!r})")
        return table
    assert path is not None
    rows = _read_file(path)
    if rows.num_rows == 0:
        raise DataError(f"{path}: no rows")
    return InputTable(with_provenance(rows, path.name), file_sha256(path), str(path))


def _read_file(path: Path) -> Any:
    import pyarrow as pa

    if not path.is_file():
        raise DataError(f"{path}: no such input file")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".csv"):
        return _read_table(path, suffix)
    if suffix == ".json":
        return pa.Table.from_pylist(_benchmark_rows(path))
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


def _benchmark_rows(path: Path) -> list[dict[str, Any]]:
    """The items of a benchmark file in lexsem's JSON formats (`lexsem explore`'s export): a
    list of objects (SugarCrepe++, ids in `id`) or an object of objects keyed by id
    (SugarCrepe); each item a row, its id in `id`."""
    data = read_json(path)
    items = (
        [{"id": k, **v} if isinstance(v, dict) else v for k, v in data.items()]
        if isinstance(data, dict)
        else data
    )
    if not isinstance(items, list) or not items:
        raise DataError(f"{path}: a benchmark file holds a list of items or an object of them")
    for n, row in enumerate(items, 1):
        if not isinstance(row, dict):
            raise DataError(f"{path}: item {n} is not a JSON object ({row!r:.40})")
    return [{**r, "id": str(r["id"])} if "id" in r else r for r in items]


def _read_table(path: Path, suffix: str) -> Any:
    """A Parquet or CSV input as a table; a file pyarrow cannot read is a `DataError`."""
    import pyarrow as pa

    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path)
        import pyarrow.csv as pcsv

        return pcsv.read_csv(path)
    except (pa.ArrowException, OSError) as exc:
        what = "Parquet" if suffix == ".parquet" else "CSV"
        raise DataError(
            f"{path}: not a readable {what} file ({' '.join(str(exc).split())})"
        ) from None


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

"""A human study's answers table read from its Parquet file (`lexsem annotate export
--answers`) or taken as a `pyarrow.Table`, with its name and sha256 (a human run's
fingerprint), and checked for the columns a reader needs (docs/human-studies.md, "The answers
table"). It sits in the build layer because the build's fold-back stages read it
(`lexsem.construct.study_answers`, `lexsem.annotate.fold_back`), as do the human run and the
agreement statistics above it."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from lexsem.errors import DataError

__all__ = ["check_columns", "read_answers"]


def read_answers(source: str | Path | pa.Table) -> tuple[pa.Table, str, str]:
    """(table, name, sha256) of an answers table or of its Parquet file; a file that is not one
    is an error naming it."""
    if isinstance(source, pa.Table):
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, source.schema) as w:
            w.write_table(source)
        return source, "answers", hashlib.sha256(sink.getvalue()).hexdigest()
    import pyarrow.parquet as pq

    path = Path(source)
    try:
        data = path.read_bytes()
        table = pq.read_table(pa.BufferReader(data))
    except FileNotFoundError:
        raise DataError("no such answers file", file=path) from None
    except IsADirectoryError:
        raise DataError("is a folder, not an answers file (Parquet)", file=path) from None
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"not a Parquet answers table ({exc})", file=path) from None
    return table, path.name, hashlib.sha256(data).hexdigest()


def check_columns(table: pa.Table, where: str, need: Sequence[str]) -> None:
    """A table without one of the columns `need` is an error naming the file."""
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise DataError(
            f"not a study's answers table: no column {missing[0]!r} (it has "
            f"{', '.join(table.column_names) or 'none'})",
            file=where,
        )

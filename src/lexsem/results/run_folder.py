"""Write and read a run folder: run.json (RunRecord) + items.parquet (per-item scores and hits).

A run folder is written as a unit (`lexsem.results.folder_swap`): both files go into a fresh folder
beside it, which then replaces it whole, so a kill at any moment leaves the previous complete
run or the new complete run, never the files of two runs. items.parquet also carries the run
id of its run.json (schema metadata `lexsem.run_id`), and the readers check it: a folder mixed
by other means (files copied by hand, an older lexsem) is refused, naming both files. Its pages
carry CRC checksums, verified when it is read: bytes damaged inside the file (not only a cut
end) are an error naming it, never other hits. A folder
that holds a run is replaced only with `force`. Paths under the home folder are written `~/...`
and URLs without their credentials (`lexsem.results.redact`); a record read is shown without
URL credentials too (a run.json written by other means).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from lexsem.credentials import redacted
from lexsem.errors import LexsemError
from lexsem.jsonl import read_json
from lexsem.results.folder_swap import ITEMS_PARQUET, RUN_JSON, check_out_dir, located, writing
from lexsem.results.redact import shareable
from lexsem.results.schema import SCHEMA_VERSION, RunRecord

__all__ = [
    "ITEMS_PARQUET",
    "RUN_JSON",
    "RunWriteError",
    "check_out_dir",
    "items_path",
    "load_items",
    "load_run",
    "save_run",
]

RUN_ID_KEY = b"lexsem.run_id"
ITEM_COLUMNS = ("benchmark", "subset", "item_id", "task", "metric", "hit", "tie")


class RunWriteError(LexsemError, OSError):
    """The run folder could not be written (what it held before is kept)."""


def _stamped(items: pa.Table, run_id: str) -> pa.Table:
    meta = dict(items.schema.metadata or {})
    meta[RUN_ID_KEY] = run_id.encode()
    return items.replace_schema_metadata(meta)


def _write_record(path: Path, record: RunRecord) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(shareable(record).model_dump_json(indent=2))
        fh.write("\n")


def save_run(
    folder: str | Path, record: RunRecord, items: pa.Table, *, force: bool = False
) -> Path:
    """Write the run folder as a unit; a folder already holding a run is replaced only with
    `force` (LexsemError otherwise)."""
    folder = Path(folder)
    try:
        with writing(folder, force=force) as tmp:
            pq.write_table(
                _stamped(items, record.run_id), tmp / ITEMS_PARQUET, write_page_checksum=True
            )
            _write_record(tmp / RUN_JSON, record)
    except LexsemError:
        raise
    except OSError as exc:
        raise RunWriteError(
            f"could not write the run folder {folder}: {exc}; it holds what it held before"
        ) from exc
    return folder


def _files(path: str | Path) -> tuple[Path, Path]:
    """(run.json, items.parquet) of a run folder or of a run.json path."""
    path = Path(path)
    if path.name == RUN_JSON and not path.is_dir():
        folder = path.parent if path.exists() else located(path.parent)
    else:
        folder = located(path)
    return folder / RUN_JSON, folder / ITEMS_PARQUET


def items_path(path: str | Path) -> Path:
    """The items.parquet of a run folder (or of its run.json), whether or not it exists."""
    return _files(path)[1]


def _read_json(file: Path) -> Any:
    """The JSON of a run's run.json (`lexsem.jsonl.read_json`: malformed, not UTF-8 or nested
    too deep, a `DataError` naming it)."""
    if not file.exists():
        raise LexsemError(f"{file}: no such run file")
    return read_json(file)


def _parquet_error(file: Path, exc: BaseException) -> LexsemError:
    return LexsemError(
        f"{file}: unreadable per-item file ({type(exc).__name__}: {' '.join(str(exc).split())}); "
        "the run folder is "
        "damaged: evaluate again to rewrite it"
    )


def _check_items_match(record: RunRecord, run_json: Path, items: Path) -> None:
    """The items.parquet beside run.json belongs to the same run (when it says which)."""
    if not items.exists():
        return
    try:
        meta = pq.read_schema(items).metadata or {}
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _parquet_error(items, exc) from None
    stamped = meta.get(RUN_ID_KEY)
    if stamped is not None and stamped.decode() != record.run_id:
        raise LexsemError(
            f"{items} belongs to run {stamped.decode()} but {run_json} to run {record.run_id}: "
            "the folder mixes two runs; evaluate again to rewrite it"
        )


def load_run(path: str | Path) -> RunRecord:
    """Read a run folder (or its run.json), checking the schema version and that the folder's
    items.parquet, when there is one, belongs to the same run."""
    file, items = _files(path)
    raw = _read_json(file)
    if not isinstance(raw, dict):
        raise LexsemError(f"{file}: not a run record (a JSON {type(raw).__name__})")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise LexsemError(
            f"{file}: schema version {version!r} is not supported "
            f"(this lexsem reads version {SCHEMA_VERSION})"
        )
    try:
        record = RunRecord.model_validate(redacted(raw))
    except ValidationError as exc:
        raise LexsemError(f"{file}: invalid run record:\n{exc}") from exc
    _check_items_match(record, file, items)
    return record


def load_items(path: str | Path) -> pa.Table:
    """The per-item table of a run folder."""
    file = _files(path)[1]
    if not file.exists():
        raise LexsemError(f"{file}: no per-item file")
    try:
        table = pq.read_table(file, page_checksum_verification=True)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _parquet_error(file, exc) from None
    missing = [c for c in ITEM_COLUMNS if c not in table.column_names]
    if missing and table.num_columns:
        raise LexsemError(f"{file}: not a per-item file of lexsem (no column {missing[0]!r})")
    return table

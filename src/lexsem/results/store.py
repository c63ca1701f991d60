"""Write and read a run folder: run.json (RunRecord) + items.parquet (per-item scores and hits).

Both files are written atomically; a folder holding a run.json always holds a complete run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from lexsem.atomic import atomic_open, atomic_path
from lexsem.errors import LexsemError
from lexsem.results.schema import SCHEMA_VERSION, RunRecord

RUN_JSON = "run.json"
ITEMS_PARQUET = "items.parquet"


def save_run(folder: str | Path, record: RunRecord, items: pa.Table) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / ITEMS_PARQUET) as tmp:
        pq.write_table(items, tmp)
    with atomic_open(folder / RUN_JSON, "w", encoding="utf-8") as fh:
        fh.write(record.model_dump_json(indent=2))
        fh.write("\n")
    return folder


def _run_json(path: str | Path) -> Path:
    path = Path(path)
    return path / RUN_JSON if path.is_dir() else path


def load_run(path: str | Path) -> RunRecord:
    """Read a run folder (or its run.json), checking the schema version."""
    file = _run_json(path)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LexsemError(f"{file}: no such run file") from None
    except json.JSONDecodeError as exc:
        raise LexsemError(f"{file}:{exc.lineno}: malformed run JSON: {exc.msg}") from exc
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version != SCHEMA_VERSION:
        raise LexsemError(
            f"{file}: schema version {version!r} is not supported "
            f"(this lexsem reads version {SCHEMA_VERSION})"
        )
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as exc:
        raise LexsemError(f"{file}: invalid run record:\n{exc}") from exc


def load_items(path: str | Path) -> pa.Table:
    """The per-item table of a run folder."""
    file = _run_json(path).parent / ITEMS_PARQUET
    if not file.exists():
        raise LexsemError(f"{file}: no per-item file")
    return pq.read_table(file)

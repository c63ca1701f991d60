"""The runs a site is made from, each read once: the site keeps a manifest (run folder → the
sha256 of its run.json and items.parquet, and the two files' sizes and modification times) and
a cache of what it read (the record and the per-item hits, under the digest), so publishing
again reads (`load_run`, `load_items`) only the runs that changed (a run copied or moved to
another folder is found in the cache by its digest). A run whose two files have the
size and modification time the manifest says is taken as unchanged without hashing (as make and
rsync do); any other is hashed, and read only when its digest is new. A cache file that cannot be
read is no error: the run is read again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lexsem.digests import file_sha256, json_sha256
from lexsem.errors import DataError, LexsemError
from lexsem.jsonl import read_json
from lexsem.results.run_folder import RUN_JSON, items_path, load_items, load_run
from lexsem.results.schema import RunRecord

__all__ = [
    "CACHE_DIR",
    "HIT_COLUMNS",
    "MANIFEST",
    "MAX_ITEMS",
    "MAX_RUNS",
    "Collected",
    "Loaded",
    "collect",
    "read_manifest",
]

MANIFEST = "manifest.json"
CACHE_DIR = "cache"
MAX_RUNS = 2000  # run folders per site
MAX_ITEMS = 5_000_000  # per-item rows per run
HIT_COLUMNS = ("benchmark", "subset", "item_id", "task", "metric", "hit")
Loader = Callable[[Path], tuple[RunRecord, pa.Table]]


@dataclass
class Loaded:
    """One run: the folder given, its digest, its record and its per-item hits."""

    folder: Path
    digest: str
    record: RunRecord
    hits: pa.Table  # HIT_COLUMNS

    @property
    def name(self) -> str:
        return self.record.model.name


@dataclass
class Collected:
    runs: list[Loaded]
    manifest: dict[str, Any]  # the new manifest's "runs"
    read: int  # runs read from their folders (not from the cache)


def read_run(folder: Path) -> tuple[RunRecord, pa.Table]:
    """A run folder's record and per-item hits (`load_run`, `load_items`), bounded."""
    record = load_run(folder)
    items = load_items(folder)
    if items.num_rows > MAX_ITEMS:
        raise LexsemError(
            f"{items_path(folder)}: {items.num_rows} per-item rows; a site takes at most "
            f"{MAX_ITEMS} per run"
        )
    return record, _hits(items, items_path(folder))


def _hits(items: pa.Table, file: Path) -> pa.Table:
    if items.num_rows == 0:
        return pa.table({c: pa.array([], pa.bool_() if c == "hit" else pa.string())
                         for c in HIT_COLUMNS})  # fmt: skip
    missing = [c for c in HIT_COLUMNS if c not in items.column_names]
    if missing:
        raise LexsemError(f"{file}: no column {missing[0]!r}: not a per-item file of lexsem")
    return items.select(list(HIT_COLUMNS))


def _stat(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _digest(files: Sequence[Path]) -> str:
    """One sha256 of a run folder's files: of their names and each file's sha256."""
    return json_sha256([[file.name, file_sha256(file)] for file in files])


def read_manifest(site: Path) -> dict[str, Any]:
    """The runs of the manifest of `site` ({} when there is none, or it cannot be read)."""
    try:
        raw = read_json(site / MANIFEST)
    except (OSError, DataError):
        return {}
    runs = raw.get("runs") if isinstance(raw, dict) else None
    return runs if isinstance(runs, dict) else {}


def _cached(site: Path, digest: str) -> tuple[RunRecord, pa.Table] | None:
    base = site / CACHE_DIR / digest
    try:
        record = RunRecord.model_validate(read_json(base.with_suffix(".json")))
        hits = pq.read_table(base.with_suffix(".parquet"))
    except (OSError, DataError, ValueError, pa.ArrowException):
        return None
    if hits.column_names != list(HIT_COLUMNS):
        return None
    return record, hits


def write_cache(folder: Path, run: Loaded) -> None:
    """Keep `run` in the cache folder `folder` of the site being written."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / run.digest
    base.with_suffix(".json").write_text(run.record.model_dump_json(), encoding="utf-8")
    pq.write_table(run.hits, base.with_suffix(".parquet"))


def collect(folders: Sequence[Path], site: Path, loader: Loader | None = None) -> Collected:
    """The runs of `folders` (in order), read through `loader` only where the manifest of the
    existing `site` does not know their digest (module doc)."""
    if len(folders) > MAX_RUNS:
        raise LexsemError(f"{len(folders)} runs given; a site takes at most {MAX_RUNS}")
    load = loader or read_run
    old = read_manifest(site)
    runs: list[Loaded] = []
    manifest: dict[str, Any] = {}
    read = 0
    for folder in folders:
        items = items_path(folder)
        files = [items.parent / RUN_JSON, items]
        for f in files:
            if not f.is_file():
                raise LexsemError(f"{f}: no such run file")
        key = os.path.realpath(items.parent)
        stats = [_stat(f) for f in files]
        before = old.get(key) if isinstance(old.get(key), dict) else {}
        digest = before.get("sha256") if before.get("stat") == stats else None
        digest = digest if isinstance(digest, str) else _digest(files)
        got = _cached(site, digest)  # by digest: a run moved to another folder is not read
        if got is None:
            got = load(folder)
            read += 1
        runs.append(Loaded(folder, digest, *got))
        manifest[key] = {"sha256": digest, "stat": stats}
    return Collected(runs, manifest, read)

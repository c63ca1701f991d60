"""A frozen benchmark as files `datasets.load_dataset(FOLDER)` reads: Parquet files and the
``configs`` of the data card's YAML header (docs/building.md, "Freeze").

Formats ``scpp``, ``sugarcrepe`` and ``visla``: beside each ``<subset>.json`` (``.tsv``) the
same items are written as ``data/<subset>-<sha12>.parquet`` (``sha12``: the first 12 hex digits
of the file's sha256) with the columns of the JSON file, in its
order (``id``, ``subset``, ``caption``, ``caption2`` for ``scpp`` and ``visla``,
``negative_caption``, ``filename``, ``source``,
``source_id``), all strings. ``filename`` is the image reference the JSON file holds (null for an
item without an image): a path, read where `lexsem eval` reads it (the images of such a build are
usually a public dataset's, COCO's among them, with their own licence and size, so they are
referenced, not copied). Format ``bivlc``: ``test.parquet`` already is a file `datasets` writes
(two Image columns, their bytes embedded), so nothing more is written.

`datasets` keys its cache of a local folder by the folder's name (``benchmark`` for every build)
and the ``configs`` of the card, so the ``configs`` name what the files hold: every Parquet file
is listed by its name, which carries its digest, and ``bivlc``'s ``test.parquet`` (a name its
loader reads) with its sha256 in the config's ``description``. Two builds, or a build made again
with other rows, loaded into one cache each give their own rows.

One config, ``default``, with one split, ``test``: every item, its subset in the column
``subset`` (``bivlc``: ``type`` and ``subtype``). ``datasets.load_dataset(FOLDER)`` with FOLDER
the build's ``benchmark`` folder gives ``DatasetDict({"test": ...})``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lexsem.digests import file_sha256

__all__ = ["DATA_DIR", "SPLIT", "configs", "write_dataset_files"]

DATA_DIR = "data"
SPLIT = "test"
BIVLC_FILE = "test.parquet"


def _columns(fmt: str) -> tuple[str, ...]:
    texts = ("caption", "caption2") if fmt in ("scpp", "visla") else ("caption",)
    return ("id", "subset", *texts, "negative_caption", "filename", "source", "source_id")


def write_dataset_files(
    fmt: str, subsets: dict[str, list[dict[str, Any]]], folder: Path
) -> list[dict[str, Any]]:
    """Write the Parquet files of `subsets` (items as the freeze stage makes them) into
    `folder`; each file's row for the card: ``file`` (relative to `folder`), ``sha256``,
    ``rows``. Nothing is written for ``bivlc`` (its own file is read)."""
    if fmt == "bivlc":
        return []
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = _columns(fmt)
    schema = pa.schema([(n, pa.string()) for n in names])
    (folder / DATA_DIR).mkdir(exist_ok=True)
    out = []
    for name in sorted(subsets):
        rows = [{**it, "subset": name} for it in subsets[name]]
        table = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows], schema=schema)
        path = folder / DATA_DIR / f"{name}.parquet"
        pq.write_table(table, path)
        path = path.rename(path.with_name(f"{name}-{file_sha256(path)[:12]}.parquet"))
        out.append({"file": f"{DATA_DIR}/{path.name}", "sha256": file_sha256(path),
                    "rows": table.num_rows})  # fmt: skip
    return out


def configs(fmt: str, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``configs`` of the card's YAML header for a benchmark of format `fmt`: `files` are
    the rows `write_dataset_files` returned, for ``bivlc`` the card's ``files`` row of
    ``test.parquet`` (``file``, ``sha256``)."""
    if fmt == "bivlc":
        (entry,) = [f for f in files if f["file"] == BIVLC_FILE]
        return [{"config_name": "default", "description": f"{BIVLC_FILE} sha256 {entry['sha256']}",
                 "data_files": [{"split": SPLIT, "path": BIVLC_FILE}]}]  # fmt: skip
    paths = sorted(f["file"] for f in files)
    return [{"config_name": "default", "data_files": [{"split": SPLIT, "path": paths}]}]

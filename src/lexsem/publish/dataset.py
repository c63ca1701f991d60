"""The board as a dataset `datasets.load_dataset(FOLDER, CONFIG)` reads (`--hf-dataset`), laid
out as a frozen build's (`lexsem.construct.dataset_files`): Parquet files under ``data/``, each
named with the first 12 hex digits of its sha256 (`datasets` keys its cache of a local folder
by the folder's name and the card's ``configs``: a folder published again with other rows gives
its own rows), and a ``README.md`` dataset card whose YAML header lists the ``configs``:

- ``summary``: one row per model × benchmark × task × metric × subset (`SUMMARY_COLUMNS`);
- ``details``: one row per model × item × metric, the per-item hits (`DETAILS_COLUMNS`).

Each config has one split, ``train`` (the split name `datasets` gives a single file by default).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lexsem._version import __version__
from lexsem.construct.dataset_files import DATA_DIR
from lexsem.digests import file_sha256
from lexsem.publish.board import BoardTable
from lexsem.publish.facts import modality, model_family, parameters
from lexsem.publish.merge import Entry

__all__ = [
    "DETAILS_COLUMNS", "MARKER", "SPLIT", "SUMMARY_COLUMNS", "details_table", "summary_rows",
    "write_dataset",
]  # fmt: skip

SPLIT = "train"
MARKER = "lexsem_publish.json"  # what makes a folder one `lexsem publish` wrote

SUMMARY_COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    "model": (pa.string(), "the model's name (run.json `model.name`)"),
    "model_spec": (pa.string(), "the model spec lexsem ran (`BACKEND:NAME[?options]`)"),
    "model_family": (pa.string(), "the model's backend"),
    "parameters": (pa.int64(), "number of parameters, where the run records it (else null)"),
    "dtype": (pa.string(), "the dtype the model ran in"),
    "modality": (pa.string(), "text-only or image-text"),
    "family": (pa.string(), "the benchmark family (SugarCrepe++, VISLA, ...)"),
    "benchmark": (pa.string(), "the benchmark"),
    "task": (pa.string(), "the task"),
    "metric": (pa.string(), "the metric"),
    "subset": (pa.string(), "a subset, or an aggregate (`_micro`, `_macro`, `_<group>`)"),
    "accuracy": (pa.float64(), "accuracy in percent"),
    "ci_low": (pa.float64(), "lower end of the 95% interval (percent)"),
    "ci_high": (pa.float64(), "upper end of the 95% interval (percent)"),
    "ci_method": (pa.string(), "wilson (subsets, `_micro`) or bootstrap (other aggregates)"),
    "n": (pa.int64(), "items scored"),
    "hits": (pa.int64(), "items right"),
    "rank": (pa.int64(), "rank on the board (McNemar + Holm rank groups); null: not ranked"),
    "rank_group": (pa.string(), "the letters of the rank groups the model belongs to"),
    "data_sha256": (pa.list_(pa.string()), "`subset:sha256` of each benchmark file read"),
    "lexsem_version": (pa.string(), "the lexsem version that made the run"),
    "lock_sha256": (pa.string(), "sha256 of the dependency lock of the run's environment"),
    "run_id": (pa.string(), "the run's id (run.json `run_id`)"),
}
DETAILS_COLUMNS: dict[str, tuple[pa.DataType, str]] = {
    **{k: SUMMARY_COLUMNS[k] for k in ("model", "run_id", "benchmark", "task", "metric")},
    "subset": (pa.string(), "the item's subset"),
    "item_id": (pa.string(), "the item's id in its benchmark file"),
    "hit": (pa.bool_(), "whether the model got the item right"),
}


def _schema(columns: dict[str, tuple[pa.DataType, str]]) -> pa.Schema:
    return pa.schema([(name, kind) for name, (kind, _) in columns.items()])


def summary_rows(tables: Sequence[BoardTable]) -> list[dict[str, Any]]:
    """The summary config's rows (also the site's JSON rows, with more keys there)."""
    out = []
    for t in tables:
        for row in t.rows:
            rec, r = row.entry.run.record, row.result
            out.append({
                "model": rec.model.name, "model_spec": rec.model.spec,
                "model_family": model_family(rec), "parameters": parameters(rec),
                "dtype": rec.model.dtype, "modality": modality(rec), "family": t.family,
                "benchmark": t.benchmark, "task": t.task, "metric": t.metric,
                "subset": t.subset, "accuracy": r.accuracy,
                "ci_low": row.ci[0] if row.ci else None, "ci_high": row.ci[1] if row.ci else None,
                "ci_method": row.ci_method or None, "n": r.n, "hits": r.hits, "rank": row.rank,
                "rank_group": row.group or None,
                "data_sha256": [f"{s}:{sha}" for s, sha in sorted(t.sha256.items())],
                "lexsem_version": rec.lexsem_version,
                "lock_sha256": rec.environment.get("lock_sha256"), "run_id": rec.run_id,
            })  # fmt: skip
    return out


def details_table(entries: Sequence[Entry]) -> pa.Table:
    parts = []
    for e in entries:
        hits = e.run.hits
        mask = pc.and_(pc.equal(hits["benchmark"], e.benchmark), pc.equal(hits["task"], e.task))
        mine = hits.filter(mask)
        parts.append(pa.table({
            "model": pa.array([e.run.name] * mine.num_rows, pa.string()),
            "run_id": pa.array([e.run.record.run_id] * mine.num_rows, pa.string()),
            **{c: mine[c].cast(DETAILS_COLUMNS[c][0]) for c in
               ("benchmark", "task", "metric", "subset", "item_id", "hit")},
        }))  # fmt: skip
    schema = _schema(DETAILS_COLUMNS)
    if not parts:
        return schema.empty_table()
    return pa.concat_tables([p.select(schema.names).cast(schema) for p in parts])


def _write(table: pa.Table, folder: Path, name: str) -> dict[str, Any]:
    (folder / DATA_DIR).mkdir(parents=True, exist_ok=True)
    path = folder / DATA_DIR / f"{name}.parquet"
    pq.write_table(table, path)
    sha = file_sha256(path)
    path = path.rename(path.with_name(f"{name}-{sha[:12]}.parquet"))
    return {"config": name, "file": f"{DATA_DIR}/{path.name}", "sha256": sha,
            "rows": table.num_rows}  # fmt: skip


def _card(files: list[dict[str, Any]], n_models: int, n_runs: int) -> str:
    import yaml

    header = {
        "pretty_name": "lexsem leaderboard results",
        "tags": ["lexsem", "leaderboard", "evaluation"],
        "configs": [
            {"config_name": f["config"], "data_files": [{"split": SPLIT, "path": f["file"]}]}
            for f in files
        ],
    }
    out = ["---", yaml.safe_dump(header, sort_keys=False).rstrip("\n"), "---", "",
           "# lexsem leaderboard results", "",
           f"Results of {n_models} models in {n_runs} lexsem runs, written by `lexsem publish` "
           f"(lexsem {__version__}). Load a config with "
           "`datasets.load_dataset(FOLDER, \"summary\")` (or `\"details\"`).", ""]  # fmt: skip
    for f, columns in zip(files, (SUMMARY_COLUMNS, DETAILS_COLUMNS), strict=True):
        out += [f"## {f['config']}", "", f"`{f['file']}` ({f['rows']} rows, sha256 "
                f"{f['sha256']})", "", "| column | type | what |", "|---|---|---|"]  # fmt: skip
        out += [f"| `{c}` | {kind} | {what} |" for c, (kind, what) in columns.items()]
        out.append("")
    out += ["Rank groups: exact McNemar tests of every pair of a table's models on the items "
            "they all scored, Holm-corrected over the table's pairs (α = 0.05); a group is a "
            "maximal run of the accuracy-sorted list with no significant pair in it "
            "(lexsem's docs/publish.md)."]  # fmt: skip
    return "\n".join(out) + "\n"


def write_dataset(
    folder: Path, tables: Sequence[BoardTable], entries: Sequence[Entry], details: pa.Table
) -> list[dict[str, Any]]:
    """Write the dataset into the (new, empty) `folder`; `details`: `details_table(entries)`.
    Its files' rows (config, file, sha256, rows)."""
    folder.mkdir(parents=True, exist_ok=True)
    summary = pa.Table.from_pylist(summary_rows(tables), schema=_schema(SUMMARY_COLUMNS))
    files = [_write(summary, folder, "summary"), _write(details, folder, "details")]
    models = {e.run.name for e in entries}
    runs = {e.run.digest for e in entries}
    (folder / "README.md").write_text(_card(files, len(models), len(runs)), encoding="utf-8")
    (folder / MARKER).write_text(
        json.dumps({"generator": "lexsem", "version": __version__, "files": files}, indent=2)
        + "\n",
        encoding="utf-8",
    )
    return files

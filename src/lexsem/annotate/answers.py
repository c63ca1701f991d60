"""A study's answers as one table (`lexsem annotate export STUDY --answers FILE.parquet`): one
row per answer given, the interface that agreement statistics, the human run folder and build
fold-back read (docs/human-studies.md, "The answers table"); its columns:
`lexsem.results.answers_table.ANSWERS_SCHEMA`.
"""

from __future__ import annotations

import json
import sqlite3

import pyarrow as pa

from lexsem.annotate.study import load_settings
from lexsem.results.answers_table import ANSWERS_SCHEMA

__all__ = ["answers_table"]


def answers_table(con: sqlite3.Connection) -> pa.Table:
    """Every answer of the study, in answer order within each annotator."""
    name = load_settings(con).name
    rows = con.execute(
        "SELECT u.kind, u.item_id, u.subset, u.benchmark, a.annotator, u.practice, u.gold,"
        " a.options, a.answer, u.correct, a.edit, a.seconds, a.answered_at, n.seed"
        " FROM assignments a JOIN units u ON u.id = a.unit JOIN annotators n ON n.id = a.annotator"
        " WHERE a.answer IS NOT NULL ORDER BY a.annotator, a.seq"
    ).fetchall()
    cols: dict[str, list] = {f.name: [] for f in ANSWERS_SCHEMA}
    for r in rows:
        cols["study"].append(name)
        for key in ("kind", "item_id", "subset", "benchmark", "annotator", "answer", "edit"):
            cols[key].append(r[key])
        cols["practice"].append(bool(r["practice"]))
        cols["gold"].append(bool(r["gold"]))
        cols["options"].append(json.loads(r["options"]))
        cols["correct"].append(None if r["correct"] is None else r["answer"] == r["correct"])
        cols["seconds"].append(float(r["seconds"]))
        cols["answered_at"].append(r["answered_at"])
        cols["seed"].append(int(r["seed"]))
    return pa.table(cols, schema=ANSWERS_SCHEMA)

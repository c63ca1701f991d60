"""A study's answers as one table (`lexsem annotate export STUDY --answers FILE.parquet`): one
row per answer given, the interface that agreement statistics, the human run folder and build
fold-back read (docs/human-studies.md, "The answers table"); its columns:
`lexsem.results.answers_table.ANSWERS_SCHEMA`.
"""

from __future__ import annotations

import pyarrow as pa

from lexsem.annotate import store
from lexsem.annotate.study import load_settings
from lexsem.results.answers_table import ANSWERS_SCHEMA

__all__ = ["answers_table"]


def answers_table(con: store.Connection) -> pa.Table:
    """Every answer of the study, in answer order within each annotator."""
    name = load_settings(con).name
    cols: dict[str, list] = {f.name: [] for f in ANSWERS_SCHEMA}
    for r in store.answers(con):
        cols["study"].append(name)
        for key in ("kind", "item_id", "subset", "benchmark", "annotator", "answer", "edit"):
            cols[key].append(getattr(r, key))
        cols["practice"].append(r.practice)
        cols["gold"].append(r.gold)
        cols["options"].append(r.options)
        cols["correct"].append(None if r.right is None else r.answer == r.right)
        cols["seconds"].append(r.seconds)
        cols["answered_at"].append(r.answered_at)
        cols["seed"].append(r.seed)
    return pa.table(cols, schema=ANSWERS_SCHEMA)

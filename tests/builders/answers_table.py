"""A study's answers table built by hand (the interface of docs/human-studies.md, "The answers
table": `lexsem.results.answers_table.ANSWERS_SCHEMA`), for the tests of agreement, human
runs, Label Studio and fold-back."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lexsem.results.answers_table import ANSWERS_SCHEMA

RIGHT = {"tot": "n", "itt": "n", "pair": "pos"}  # the right option of each kind's items


def answer(
    kind: str, item_id: str, annotator: str, choice: str, *, subset: str = "s",
    benchmark: str = "b", correct: bool | str | None = "auto", practice: bool = False,
    gold: bool = False, options: list[str] | None = None, edit: str | None = None,
    study: str = "st", seconds: float = 3.0,
) -> dict[str, Any]:  # fmt: skip
    """One row of the answers table; `correct="auto"`: whether `choice` is the kind's right
    option (`RIGHT`; the query's base for BiVLC, None for kinds without one)."""
    if correct == "auto":
        if kind in RIGHT:
            correct = choice == RIGHT[kind]
        elif kind in ("bivlc_i2t", "bivlc_t2i"):
            k = item_id.rpartition("#")[2][-1]
            correct = choice[-1] == k and choice != "skip"
        else:
            correct = None
    return {
        "study": study, "kind": kind, "item_id": item_id, "subset": subset,
        "benchmark": benchmark, "annotator": annotator, "practice": practice, "gold": gold,
        "options": options or [], "answer": choice, "correct": correct, "edit": edit,
        "seconds": seconds, "answered_at": "2025-01-01T00:00:00+00:00", "seed": 1,
    }  # fmt: skip


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)

"""Assignment: which unit an annotator answers next, and the answer recorded.

When an annotator starts, one write transaction reserves their work: every practice unit
(served first), up to `quota` items that fewer than `overlap` annotators hold (items already
held by others first, so annotators share the same groups, as BiVLC's pairs did; then in the
study's sampled order), all units of each item, and every gold unit mixed in at seeded places.
A reservation is an assignment row, committed: a restarted server serves the same units to the
same annotator and never gives an item to more than `overlap` annotators.

An answer is one transaction: the assignment's answer, edit, seconds (from the first time the
unit was shown) and time, only if it had none (a repeated POST records nothing twice).
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.order import option_order, serving_order
from lexsem.annotate.study import now_iso

__all__ = ["Unit", "next_unit", "record_answer", "reserve", "unit"]


@dataclass(frozen=True)
class Unit:
    """A unit as one annotator sees it."""

    id: int
    kind: str
    item_id: str
    subset: str
    practice: bool
    gold: bool
    correct: str | None
    payload: dict[str, Any]
    options: list[str]  # option ids in the order shown (fixed choices last)
    answer: str | None
    edit: str | None
    seq: int


def reserve(con: sqlite3.Connection, annotator: str, settings: StudySettings) -> int:
    """Reserve the annotator's units (once); the number of main items reserved."""
    with store.write(con):
        row = con.execute(
            "SELECT seed, reserved FROM annotators WHERE id = ?", (annotator,)
        ).fetchone()
        if row["reserved"]:
            return -1
        seed = row["seed"]
        units = con.execute(
            "SELECT id, kind, practice, gold, item_key, payload FROM units ORDER BY position"
        ).fetchall()
        held = dict(
            con.execute(
                "SELECT u.item_key, COUNT(DISTINCT a.annotator) FROM units u JOIN assignments a"
                " ON a.unit = u.id WHERE u.practice = 0 AND u.gold = 0 GROUP BY u.item_key"
            ).fetchall()
        )
        block = {k: i for i, k in enumerate(settings.kinds)}
        practice = [u for u in units if u["practice"]]
        gold = [u for u in units if u["gold"]]
        main = [u for u in units if not u["practice"] and not u["gold"]]
        first_pos: dict[str, int] = {}
        for i, u in enumerate(main):
            first_pos.setdefault(u["item_key"], i)
        free = [k for k in first_pos if held.get(k, 0) < settings.overlap]
        free.sort(key=lambda k: (-held.get(k, 0), first_pos[k]))
        chosen = set(free[: settings.quota] if settings.quota else free)
        mine = [u for u in main if u["item_key"] in chosen]
        order = serving_order(seed, [(block.get(u["kind"], 0), u["id"]) for u in practice])
        main_order = serving_order(seed, [(block.get(u["kind"], 0), u["id"]) for u in mine])
        rng = random.Random(f"{seed}:gold")
        for u in gold:  # each gold unit at a seeded place among the annotator's units
            main_order.insert(rng.randint(0, len(main_order)), u["id"])
        by_id = {u["id"]: u for u in units}
        for seq, uid in enumerate([*order, *main_order]):
            u = by_id[uid]
            opts = [o["id"] for o in json.loads(u["payload"])["options"]]
            shown = option_order(seed, uid, opts, FIXED_CHOICES[u["kind"]])
            con.execute(
                "INSERT INTO assignments (annotator, unit, seq, options) VALUES (?, ?, ?, ?)",
                (annotator, uid, seq, json.dumps(shown)),
            )
        con.execute("UPDATE annotators SET reserved = 1 WHERE id = ?", (annotator,))
        return len(chosen)


_UNIT_SQL = (
    "SELECT u.id, u.kind, u.item_id, u.subset, u.practice, u.gold, u.correct, u.payload,"
    " a.options, a.answer, a.edit, a.seq FROM assignments a JOIN units u ON u.id = a.unit"
    " WHERE a.annotator = ?"
)


def _unit(row: sqlite3.Row) -> Unit:
    return Unit(
        row["id"], row["kind"], row["item_id"], row["subset"], bool(row["practice"]),
        bool(row["gold"]), row["correct"], json.loads(row["payload"]), json.loads(row["options"]),
        row["answer"], row["edit"], row["seq"],
    )  # fmt: skip


def next_unit(con: sqlite3.Connection, annotator: str) -> Unit | None:
    """The annotator's first unanswered unit (marked shown now, if it never was), or None."""
    with store.write(con):
        row = con.execute(
            f"{_UNIT_SQL} AND a.answer IS NULL ORDER BY a.seq LIMIT 1", (annotator,)
        ).fetchone()
        if row is None:
            return None
        con.execute(
            "UPDATE assignments SET served_at = ? WHERE annotator = ? AND unit = ?"
            " AND served_at IS NULL",
            (time.time(), annotator, row["id"]),
        )
    return _unit(row)


def unit(con: sqlite3.Connection, annotator: str, unit_id: int) -> Unit | None:
    """One of the annotator's units (None if it is not theirs)."""
    row = con.execute(f"{_UNIT_SQL} AND a.unit = ?", (annotator, unit_id)).fetchone()
    return None if row is None else _unit(row)


def record_answer(
    con: sqlite3.Connection, annotator: str, unit_id: int, answer: str, edit: str | None
) -> bool:
    """Record an answer (committed on return); False when the unit already had one."""
    with store.write(con):
        row = con.execute(
            "SELECT served_at, answer FROM assignments WHERE annotator = ? AND unit = ?",
            (annotator, unit_id),
        ).fetchone()
        if row is None or row["answer"] is not None:
            return False
        now = time.time()
        seconds = max(0.0, now - row["served_at"]) if row["served_at"] is not None else 0.0
        con.execute(
            "UPDATE assignments SET answer = ?, edit = ?, seconds = ?, answered_at = ?"
            " WHERE annotator = ? AND unit = ?",
            (answer, edit, seconds, now_iso(), annotator, unit_id),
        )
    return True

"""Completion codes, one per participant: an HMAC of the participant's id under the study's
secret (so a code cannot be guessed, never repeats between participants, and needs no table),
after the study's `completion_code` prefix. A participant sees their code only once they have
earned it (`earned`): every unit given to them answered, their main items answered whole (as
many as they took: a join participant's batches added up), and at least `code_min_answered` of
their main questions answered rather than skipped. `lexsem annotate verify STUDY CODE` finds
whose code it is.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import io
from dataclasses import dataclass

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.annotate.security import same_secret

__all__ = [
    "PARTICIPANT_COLUMNS",
    "Earned",
    "earned",
    "owner",
    "participant_code",
    "participant_rows",
    "participants_csv",
]


def participant_code(secret: str, prefix: str, annotator: str) -> str:
    """The participant's code: `prefix-XXXXXXXXXXXX` (12 base-32 characters, 60 bits)."""
    digest = hmac.new(secret.encode(), f"code:{annotator}".encode(), hashlib.sha256).digest()
    tail = base64.b32encode(digest).decode()[:12]
    return f"{prefix}-{tail}" if prefix else tail


@dataclass(frozen=True)
class Earned:
    """Whether a participant has earned their code, and if not, why (a sentence for them)."""

    ok: bool
    reason: str
    work: store.Work


def earned(con: store.Connection, settings: StudySettings, who: store.Annotator) -> Earned:
    """Whether `who` has earned a completion code (module docstring)."""
    w = store.work(con, who.id)
    target = who.target or 0
    if not who.reserved or target == 0:
        return Earned(False, "You were given no questions of the study.", w)
    if w.unanswered:
        return Earned(False, "Some of your questions are not answered yet.", w)
    if w.items_done < target:
        return Earned(
            False,
            f"Your reservation ran out while you were away and the study is full now: you "
            f"answered {w.items_done} of the {target} items you took. Your answers are kept.",
            w,
        )
    given = w.main_answered - w.main_skipped
    need = settings.code_min_answered * w.main
    if given < need:
        return Earned(
            False,
            f"A completion code needs at least {need:g} of your {w.main} questions answered, "
            f"not skipped; you answered {given}.",
            w,
        )
    return Earned(True, "", w)


def owner(con: store.Connection, secret: str, prefix: str, code: str) -> store.Annotator | None:
    """The participant whose code `code` is, or None (any text: a code that is not ASCII is
    no participant's)."""
    code = code.strip()
    for who in store.annotators(con):
        if same_secret(participant_code(secret, prefix, who.id), code):
            return who
    return None


#: The participants table's columns (`participant_rows`, `annotate export --participants`).
PARTICIPANT_COLUMNS = (
    "annotator", "source", "created_at", "consented_at", "started_at", "link", "assigned",
    "answered", "main", "main_skipped", "items_taken", "items_done", "gold", "gold_right",
    "code",
)  # fmt: skip


def participant_rows(
    con: store.Connection, settings: StudySettings, secret: str
) -> list[dict[str, object]]:
    """One row per participant: how they came, their work, and their completion code where
    they earned it (empty where they did not)."""
    out: list[dict[str, object]] = []
    with store.read(con):
        for who in store.annotators(con):
            got = earned(con, settings, who)
            w = got.work
            link = "revoked" if who.revoked_at else "released" if who.released_at else "active"
            out.append({
                "annotator": who.id, "source": who.source, "created_at": who.created_at,
                "consented_at": who.consented_at or "", "started_at": who.started_at or "",
                "link": link, "assigned": w.assigned, "answered": w.assigned - w.unanswered,
                "main": w.main, "main_skipped": w.main_skipped, "items_taken": who.target or 0,
                "items_done": w.items_done, "gold": w.gold, "gold_right": w.gold_right,
                "code": participant_code(secret, settings.completion_code, who.id)
                if got.ok else "",
            })  # fmt: skip
    return out


def participants_csv(rows: list[dict[str, object]]) -> bytes:
    """The participants table as CSV (UTF-8, a header row)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=PARTICIPANT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")

"""A study's lifecycle: its state (open, paused, closed, kept in the study file), when it is
full, and who may still come in.

- **open**: participants join, start and answer. **paused**: nobody starts or answers (pages
  say so; answers posted are not saved); `reopen` opens it again. **closed**: for good unless
  reopened; a participant who earned a completion code still sees it.
- **full**: every main item has `overlap` holders (`store.holders`: annotators who answered
  it whole, or still hold it). An idle participant (`idle`: no question shown or answered for
  the study's `reservation_minutes`, or none answered at all for its `first_answer_minutes`)
  does not hold an item: their unanswered items go back to the pool when someone next starts
  (`lexsem.annotate.assign`).
- A new or returning participant who has not started learns that the study is closed, paused
  or full before the consent page, and gets no work and no code; the join link also admits at
  most `max_participants`.
"""

from __future__ import annotations

from typing import Literal, get_args

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.errors import LexsemError

__all__ = [
    "STATES",
    "State",
    "free_items",
    "idle",
    "item_progress",
    "set_state",
    "state",
    "why_not_admitted",
]

State = Literal["open", "paused", "closed"]
STATES: tuple[State, ...] = get_args(State)

NOT_OPEN = {
    "paused": "This study is paused. Please come back later.",
    "closed": "This study is closed. Thank you for your interest.",
}
FULL = "This study is full: every item has all the answers it needs. Thank you for your interest."
CAPPED = "This study has all the participants it needs. Thank you for your interest."


def state(con: store.Connection) -> State:
    """The study's state ("open" where it was never set)."""
    found = store.get_meta(con, "state")
    return found if found in STATES else "open"


def set_state(con: store.Connection, new: str) -> State:
    """Set the study's state (committed on return); the state it had."""
    if new not in STATES:
        raise LexsemError(f"study state {new!r}: one of {', '.join(STATES)}")
    with store.write(con):
        old = state(con)
        store.set_meta(con, "state", new)
    return old


def idle(settings: StudySettings, minutes: float) -> store.Idle:
    """Who is idle now: no question shown or answered for `minutes` (the study's
    `reservation_minutes`, or the server's), or no question answered at all for the study's
    `first_answer_minutes` (a participant who starts and answers nothing holds their items
    for that long only)."""
    now = store.clock()
    return store.Idle(now - 60.0 * minutes, now - 60.0 * settings.first_answer_minutes)


def free_items(con: store.Connection, settings: StudySettings, minutes: float) -> int:
    """The number of main items that fewer than `overlap` participants hold, idle
    participants (`idle`) not counted."""
    with store.read(con):
        held = store.holders(con, idle(settings, minutes))
        items = store.main_item_count(con)
    full = sum(n >= settings.overlap for n in held.values())
    return items - full


def why_not_admitted(
    con: store.Connection, settings: StudySettings, minutes: float, *, joining: bool = False
) -> str | None:
    """Why a participant who has not started cannot come in now (closed, paused, full, or
    for the join link the participant cap), or None."""
    now = state(con)
    if now != "open":
        return NOT_OPEN[now]
    if free_items(con, settings, minutes) == 0:
        return FULL
    cap = settings.max_participants
    if joining and cap is not None and store.join_count(con) >= cap:
        return CAPPED
    return None


def item_progress(
    con: store.Connection, settings: StudySettings, minutes: float
) -> list[tuple[str, int, int, int]]:
    """Per main item, in the study's order: (item key, holders now, participants who answered
    it whole, answers given)."""
    with store.read(con):
        held = store.holders(con, idle(settings, minutes))
        everyone_idle = store.Idle(float("inf"), float("inf"))
        done = store.holders(con, everyone_idle)  # only those who answered it whole
        rows = store.assignments(con)
        order = [u.item_key for u in store.units(con) if not u.practice and not u.gold]
    answers: dict[str, int] = {}
    for r in rows:
        if not r.practice and not r.gold and r.answer is not None:
            answers[r.item_key] = answers.get(r.item_key, 0) + 1
    keys = list(dict.fromkeys(order))
    return [(k, held.get(k, 0), done.get(k, 0), answers.get(k, 0)) for k in keys]

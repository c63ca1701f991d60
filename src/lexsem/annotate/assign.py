"""Assignment: the units an annotator will answer, reserved when they start.

When an annotator starts, one write transaction reserves their work: up to `quota` items that
fewer than `overlap` annotators hold (items already held by others first, so annotators share
the same groups, as BiVLC's pairs did; then in the study's sampled order), all units of each
item, every practice unit (served first) and every gold unit mixed in at seeded places. Where
no item is free, nothing is reserved (no practice, no gold: the study is full for them).
A reservation is an assignment row, committed: a restarted server serves the same units to the
same annotator and never gives an item to more than `overlap` annotators.

A participant who came through the join link (anyone with the link can become one, scripts
too) takes `join_batch` items at a time: their first reservation holds one batch (with the
practice and gold units), and the transaction that records the answer to the last unit they
hold reserves the next batch, up to `quota`, where the pool has any. A participant from a
personal link takes their whole quota at the start.

Reservations expire: a reservation first gives back the unanswered main units of every idle
annotator (`store.release_idle`, `lifecycle.idle`: nothing shown or answered for the study's
`reservation_minutes`, or nothing answered at all for its `first_answer_minutes`), so scripted
joins that answer nothing cannot hold the study's items. An annotator whose units went back
gets new ones when they return (`reserve` again: items they answered in part first, up to as
many items as they had taken), where the pool has any. The next unit and the answers recorded
once are the store's (`store.next_unit`, `store.record_answer`).
"""

from __future__ import annotations

import random

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.lifecycle import idle
from lexsem.annotate.order import option_order, serving_order

__all__ = ["reserve"]


def reserve(
    con: store.Connection, annotator: str, settings: StudySettings, minutes: float | None = None
) -> int:
    """Reserve the annotator's units: their first reservation, new units after an idle one
    went back, or a join participant's next batch once every unit they hold is answered
    (`minutes`: the idle time, default the study's). The number of main items reserved; -1
    where there is nothing to reserve for them now."""
    minutes = settings.reservation_minutes if minutes is None else minutes
    with store.write(con):
        who = store.annotator(con, annotator)
        if who is None:
            return -1
        taken = who.target or 0
        again = who.reserved and who.released_at is not None  # back after an idle reservation
        if who.reserved and not again and not _batch_due(con, who, settings):
            return -1
        store.release_idle(con, idle(settings, minutes))
        units = store.units(con)
        held = store.holders(con)
        main = [u for u in units if not u.practice and not u.gold]
        first_pos: dict[str, int] = {}
        for i, u in enumerate(main):
            first_pos.setdefault(u.item_key, i)
        quota = min(settings.quota or len(first_pos), len(first_pos))
        batch = settings.join_batch if who.source == "join" else quota
        items = _items_of(con, annotator, units)
        mine = {k for k, _ in items}
        partial = {k for k, whole in items if not whole}
        if again:
            want = max(0, taken - store.work(con, annotator).items_done)
        else:  # a first reservation or the next batch
            want = min(batch, quota - taken)
        free = [k for k in first_pos if held.get(k, 0) < settings.overlap
                and (k not in mine or k in partial)]  # fmt: skip
        free.sort(key=lambda k: (k not in partial, -held.get(k, 0), first_pos[k]))
        chosen = set(free[:want])
        if not chosen and not again:
            return 0  # the study is full for them (at the start: no practice, no gold)
        seed = who.seed
        block = {k: i for i, k in enumerate(settings.kinds)}
        new = [u for u in main if u.item_key in chosen]
        order = serving_order(seed, [(block.get(u.kind, 0), u.id) for u in new])
        if not who.reserved:
            practice = [u for u in units if u.practice]
            order = serving_order(seed, [(block.get(u.kind, 0), u.id) for u in practice]) + order
            rng = random.Random(f"{seed}:gold")
            n_practice = len(practice)
            for u in units:  # each gold unit at a seeded place among the annotator's units
                if u.gold:
                    order.insert(n_practice + rng.randint(0, len(order) - n_practice), u.id)
        by_id = {u.id: u for u in units}
        start = store.next_seq(con, annotator)
        for seq, uid in enumerate(order, start):
            u = by_id[uid]
            opts = [o["id"] for o in u.payload["options"]]
            shown = option_order(seed, uid, opts, FIXED_CHOICES[u.kind])
            store.add_assignment(con, annotator, uid, seq, shown)
        if again:
            store.clear_released(con, annotator)
        else:
            store.mark_reserved(con, annotator, taken + len(chosen))
        return len(chosen)


def _batch_due(con: store.Connection, who: store.Annotator, settings: StudySettings) -> bool:
    """Whether a join participant who holds their reservation may take their next batch:
    every unit they hold is answered and they have taken fewer items than the quota."""
    if who.source != "join":
        return False
    answered, assigned = store.answer_counts(con, who.id)
    if answered < assigned:
        return False
    return settings.quota is None or (who.target or 0) < settings.quota


def _items_of(
    con: store.Connection, annotator: str, units: list[store.StoredUnit]
) -> list[tuple[str, bool]]:
    """The main items the annotator has units of, each with whether they have all of them."""
    have = {u.id for u in store.annotator_units(con, annotator)}
    size: dict[str, int] = {}
    got: dict[str, int] = {}
    for u in units:
        if not u.practice and not u.gold:
            size[u.item_key] = size.get(u.item_key, 0) + 1
            got[u.item_key] = got.get(u.item_key, 0) + (u.id in have)
    return [(k, got[k] == size[k]) for k in size if got[k]]

"""Assignment: the units an annotator will answer, reserved when they start.

When an annotator starts, one write transaction reserves their work: up to `quota` items that
fewer than `overlap` annotators hold (items already held by others first, so annotators share
the same groups, as BiVLC's pairs did; then in the study's sampled order), all units of each
item, every practice unit (served first) and every gold unit mixed in at seeded places. Where
no item is free, nothing is reserved (no practice, no gold: the study is full for them).
A reservation is an assignment row, committed: a restarted server serves the same units to the
same annotator and never gives an item to more than `overlap` annotators.

Reservations expire: the same transaction first gives back the unanswered main units of every
annotator idle for the study's `reservation_minutes` (`store.release_idle`), so scripted joins
that answer nothing cannot hold the study's items. An annotator whose units went back gets new
ones when they return (`reserve` again: items they answered in part first, up to as many items
as they took at the start), where the pool has any. The next unit and the answers recorded
once are the store's (`store.next_unit`, `store.record_answer`).
"""

from __future__ import annotations

import random

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.lifecycle import idle_before
from lexsem.annotate.order import option_order, serving_order

__all__ = ["reserve"]


def reserve(
    con: store.Connection, annotator: str, settings: StudySettings, minutes: float | None = None
) -> int:
    """Reserve the annotator's units (a first reservation, or new units after an idle one went
    back; `minutes`: the idle time, default the study's); the number of main items reserved,
    -1 where the annotator already holds theirs."""
    minutes = settings.reservation_minutes if minutes is None else minutes
    with store.write(con):
        who = store.annotator(con, annotator)
        if who is None or (who.reserved and who.released_at is None):
            return -1
        store.release_idle(con, idle_before(minutes))
        units = store.units(con)
        held = store.holders(con)
        main = [u for u in units if not u.practice and not u.gold]
        first_pos: dict[str, int] = {}
        for i, u in enumerate(main):
            first_pos.setdefault(u.item_key, i)
        if who.reserved:  # back after an idle reservation went back
            w = store.work(con, annotator)
            mine = {k for k, _ in _items_of(con, annotator, units)}
            want = max(0, (who.target or 0) - w.items_done)
        else:
            mine, want = set(), settings.quota or len(first_pos)
        partial = {k for k, whole in _items_of(con, annotator, units) if not whole}
        free = [k for k in first_pos if held.get(k, 0) < settings.overlap
                and (k not in mine or k in partial)]  # fmt: skip
        free.sort(key=lambda k: (k not in partial, -held.get(k, 0), first_pos[k]))
        chosen = set(free[:want])
        if not who.reserved and not chosen:
            return 0  # the study is full for them: no practice, no gold
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
        if who.reserved:
            store.clear_released(con, annotator)
        else:
            store.mark_reserved(con, annotator, len(chosen))
        return len(chosen)


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

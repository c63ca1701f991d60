"""Assignment: the units an annotator will answer, reserved when they start.

When an annotator starts, one write transaction reserves their work: every practice unit
(served first), up to `quota` items that fewer than `overlap` annotators hold (items already
held by others first, so annotators share the same groups, as BiVLC's pairs did; then in the
study's sampled order), all units of each item, and every gold unit mixed in at seeded places.
A reservation is an assignment row, committed: a restarted server serves the same units to the
same annotator and never gives an item to more than `overlap` annotators. The next unit and
the answers recorded once are the store's (`store.next_unit`, `store.record_answer`).
"""

from __future__ import annotations

import random

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.order import option_order, serving_order

__all__ = ["reserve"]


def reserve(con: store.Connection, annotator: str, settings: StudySettings) -> int:
    """Reserve the annotator's units (once); the number of main items reserved."""
    with store.write(con):
        who = store.annotator(con, annotator)
        if who is None or who.reserved:
            return -1
        seed = who.seed
        units = store.units(con)
        held = store.items_held(con)
        block = {k: i for i, k in enumerate(settings.kinds)}
        practice = [u for u in units if u.practice]
        gold = [u for u in units if u.gold]
        main = [u for u in units if not u.practice and not u.gold]
        first_pos: dict[str, int] = {}
        for i, u in enumerate(main):
            first_pos.setdefault(u.item_key, i)
        free = [k for k in first_pos if held.get(k, 0) < settings.overlap]
        free.sort(key=lambda k: (-held.get(k, 0), first_pos[k]))
        chosen = set(free[: settings.quota] if settings.quota else free)
        mine = [u for u in main if u.item_key in chosen]
        order = serving_order(seed, [(block.get(u.kind, 0), u.id) for u in practice])
        main_order = serving_order(seed, [(block.get(u.kind, 0), u.id) for u in mine])
        rng = random.Random(f"{seed}:gold")
        for u in gold:  # each gold unit at a seeded place among the annotator's units
            main_order.insert(rng.randint(0, len(main_order)), u.id)
        by_id = {u.id: u for u in units}
        for seq, uid in enumerate([*order, *main_order]):
            u = by_id[uid]
            opts = [o["id"] for o in u.payload["options"]]
            shown = option_order(seed, uid, opts, FIXED_CHOICES[u.kind])
            store.add_assignment(con, annotator, uid, seq, shown)
        store.mark_reserved(con, annotator)
        return len(chosen)

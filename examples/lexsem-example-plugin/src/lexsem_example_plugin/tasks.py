"""`anchor_p2`: a triplet text task anchored on the second caption: hit when s(P2, P1) beats
s(P2, N) (the per-item score columns are filled by the engine from their description)."""

from __future__ import annotations

from operator import attrgetter

from lexsem.stats.ties import Hits, TiePolicy, beats
from lexsem.tasks.base import Column, Columns, Task


def _anchor_p2(c: Columns, policy: TiePolicy) -> dict[str, Hits]:
    return {"anchor_p2": beats(c["s_p2_p1"], c["s_p2_n"], policy)}


ANCHOR_P2 = Task(
    "anchor_p2",
    "s(P2,P1) beats s(P2,N): the second caption's view of the negative",
    "triplet",
    "text",
    (
        Column("s_p2_p1", "texts", attrgetter("p2", "p1")),
        Column("s_p2_n", "texts", attrgetter("p2", "n")),
    ),
    ("anchor_p2",),
    _anchor_p2,
    chance={"anchor_p2": 50.0},
)

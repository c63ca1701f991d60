"""Tasks: which per-item score columns a task needs and which metrics it derives from them.

The engine fills the score columns (cosine similarities, pair-scorer outputs, ...); a task turns
them into `Hits` per metric. No model code and no benchmark file format here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from lexsem.errors import LexsemError
from lexsem.metrics.ties import Hits, TiePolicy
from lexsem.metrics.triplet import reordered_negative_hits, text_triplet_hits

Columns = Mapping[str, np.ndarray]

# Score columns of the text-only triplet tasks.
S_P1_P2 = "s_p1_p2"
S_P1_N = "s_p1_n"
S_P2_N = "s_p2_n"
SWAP = "reorder_swap"  # VISLA reorder flag: P2 is strictly closer to N than P1 (Levenshtein)


@dataclass(frozen=True)
class TaskSpec:
    name: str
    description: str
    item_kind: str  # "triplet" | "pair"
    modality: str  # "text" (text encoder only) | "image"
    columns: tuple[str, ...]  # score/flag columns the engine must provide
    metrics: tuple[str, ...]  # metric names produced, the first is the task's main metric
    compute: Callable[[Columns, TiePolicy], dict[str, Hits]]


def _tot(c: Columns, policy: TiePolicy) -> dict[str, Hits]:
    return {"tot": text_triplet_hits(c[S_P1_P2], c[S_P1_N], c[S_P2_N], policy)}


def _t2t(c: Columns, policy: TiePolicy) -> dict[str, Hits]:
    p1n, p2n = reordered_negative_hits(c[S_P1_P2], c[S_P1_N], c[S_P2_N], c[SWAP], policy)
    return {
        "t2t": text_triplet_hits(c[S_P1_P2], c[S_P1_N], c[S_P2_N], policy),
        "p1n": p1n,
        "p2n": p2n,
    }


TASKS: dict[str, TaskSpec] = {
    t.name: t
    for t in (
        TaskSpec(
            "tot",
            "SugarCrepe++ text-only: s(P1,P2) beats s(P1,N) and s(P2,N)",
            "triplet",
            "text",
            (S_P1_P2, S_P1_N, S_P2_N),
            ("tot",),
            _tot,
        ),
        TaskSpec(
            "t2t",
            "VISLA text-to-text (= TOT) plus P1-N / P2-N after the Levenshtein reorder",
            "triplet",
            "text",
            (S_P1_P2, S_P1_N, S_P2_N, SWAP),
            ("t2t", "p1n", "p2n"),
            _t2t,
        ),
    )
}


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise LexsemError(f"unknown task {name!r}; known: {', '.join(TASKS)}") from None

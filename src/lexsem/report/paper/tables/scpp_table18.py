"""SugarCrepe++ Table 18: the option orderings (SugarCrepe++, App. G.1), as the report lays out
runs: one row per ordering of a `choice_scpp_order` run (N, P1, P2 = NPP; P1, N, P2 = PNP;
P1, P2, N = PPN)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.layout import RunLayout, RunRow, SubsetColumns, has_result
from lexsem.report.paper.tables.scpp import SUBSETS
from lexsem.results.schema import RunRecord

TASK = "choice_scpp_order"
NAMES = dict(
    zip(SUBSETS, ("Swap Obj", "Swap Att", "Replace Obj", "Replace Att", "Replace Rel"), strict=True)
)
ORDERINGS = {
    "NPP": "Negative, Positive 1, Positive 2 (NPP)",
    "PNP": "Positive 1, Negative, Positive 2 (PNP)",
    "PPN": "Positive 1, Positive 2, Negative (PPN)",
}


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    return [
        RunRow((labels[r.run_id], name), (r,), f"{labels[r.run_id]} {o}", TASK, o)
        for r in records
        for o, name in ORDERINGS.items()
        if has_result(r, bench, TASK, o)
    ]


LAYOUT = RunLayout(
    cite="SugarCrepe++ Table 18",
    title="option orderings",
    lead=("model", "ordering"),
    columns=SubsetColumns((TASK,), NAMES),
    rows=_rows,
    note="The prompt of SugarCrepe++ App. G.1 (Figure 7) with the captions in each order; a hit "
    "when the answer names the negative's position.",
    per_benchmark=(TASK,),
)

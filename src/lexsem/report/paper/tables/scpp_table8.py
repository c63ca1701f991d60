"""SugarCrepe++ Table 8: multiple choice with Prompts 1-3 (SugarCrepe++, §3.3), as the report
lays out runs: one row per model × prompt (tasks `choice_scpp1` ... `choice_scpp3`), the subsets
as columns. The paper's prompts list N first and count a hit when the answer is (1): the
accuracy under the ordering NPP. Runs whose record says they were asked with demonstrations are
Table 14's (`scpp_table14`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.generative_runs import shots_of
from lexsem.report.paper.layout import RunLayout, RunRow, SubsetColumns, has_result
from lexsem.report.paper.tables.scpp import SUBSETS
from lexsem.results.schema import RunRecord

PROMPTS = {"choice_scpp1": "Prompt-1", "choice_scpp2": "Prompt-2", "choice_scpp3": "Prompt-3"}


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    return [
        RunRow((labels[r.run_id], prompt), (r,), f"{labels[r.run_id]} {prompt}", task, "NPP")
        for r in records
        if shots_of(r) in (0, None)
        for task, prompt in PROMPTS.items()
        if has_result(r, bench, task, "NPP")
    ]


LAYOUT = RunLayout(
    cite="SugarCrepe++ Table 8",
    title="multiple choice, Prompts 1-3",
    lead=("model", "prompt"),
    columns=SubsetColumns(tuple(PROMPTS), SUBSETS),
    rows=_rows,
    note="Accuracy (%) = hits / (hits + misses) under the paper's ordering, N listed first (NPP): "
    "a hit when the answer is (1); an answer naming no single option is a miss. Prompts verbatim "
    "from SugarCrepe++ §3.3; the paper's Human row is not reproduced.",
    per_benchmark=tuple(PROMPTS),
)

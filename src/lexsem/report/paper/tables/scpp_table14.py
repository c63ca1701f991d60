"""SugarCrepe++ Table 14: few-shot multiple choice with Prompt 3 (SugarCrepe++, App. E.4), as the
report lays out runs: one row per `choice_scpp3` run with its number of demonstrations (`shots`
in the run's model fingerprint; a run of recorded answers that keeps none says "not recorded"
and is known by its run name), zero-shot first; shown when some run is, or may be, a k-shot
run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.generative_runs import shots_of
from lexsem.report.paper.layout import RunLayout, RunRow, SubsetColumns, has_result
from lexsem.report.paper.tables.scpp import SUBSETS
from lexsem.results.schema import RunRecord

TASK = "choice_scpp3"


def _shots_label(shots: int | None) -> str:
    if shots is None:
        return "not recorded"
    return "Zero-shot" if shots == 0 else f"{shots}-shot"


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    runs = [r for r in records if has_result(r, bench, TASK, "NPP")]
    if all(shots_of(r) == 0 for r in runs):
        return []
    runs.sort(key=lambda r: (shots_of(r) is None, shots_of(r) or 0))
    return [
        RunRow((labels[r.run_id], _shots_label(shots_of(r))), (r,), labels[r.run_id], TASK, "NPP")
        for r in runs
    ]


LAYOUT = RunLayout(
    cite="SugarCrepe++ Table 14",
    title="few-shot, Prompt 3",
    lead=("model", "shots"),
    columns=SubsetColumns((TASK,), SUBSETS),
    rows=_rows,
    note="Prompt 3, ordering NPP; shots: the demonstrations before each question (`shots` in the "
    "run's model fingerprint). A run of recorded answers that does not record them: 'not "
    "recorded', known by its run name.",
    per_benchmark=(TASK,),
)

"""BiVLC Table 2 ("BiVLC: Extending Vision-Language Compositionality Evaluation with
Text-to-Image Retrieval", §4, Table 2) as the report lays out generative runs (VQAScore,
VGPTScore): `LAYOUT`, in the columns of the published table (`lexsem.report.paper.tables.bivlc.
TABLE2`), one row per model under the table's Random row (chance, by definition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.facts import Column, find_result
from lexsem.report.paper.generative_runs import by_model, model_row
from lexsem.report.paper.layout import RunColumn, RunLayout, RunRow, benchmarks_of
from lexsem.report.paper.tables.bivlc import MAIN, SUGARCREPE
from lexsem.results.schema import RunRecord
from lexsem.stats.bootstrap import MICRO

# the Random row: SugarCrepe (a pair: 50), I2T, T2I, Group (§4)
RANDOM = (50.0, 25.0, 25.0, 100 / 6)


def _on(column: Column, bench: str, header: str | None = None) -> RunColumn:
    return RunColumn(header or column.header, bench, column.subset, column.task, column.metric)


def _columns(records: Sequence[RunRecord], bench: str) -> list[RunColumn]:
    """SugarCrepe on `sugarcrepe` (else on the first benchmark of pairs that the models' runs
    have, under its name); I2T, T2I, Group on `bench`."""
    pairs = benchmarks_of([r for runs in by_model(records).values() for r in runs], ["pair"])
    sc = SUGARCREPE.benchmark if SUGARCREPE.benchmark in pairs else (pairs or [None])[0]
    head = SUGARCREPE.header if sc in (None, SUGARCREPE.benchmark) else sc
    return [_on(SUGARCREPE, sc or SUGARCREPE.benchmark, head), *(_on(c, bench) for c in MAIN)]


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    return [
        model_row(runs, labels)
        for runs in by_model(records).values()
        if find_result(runs, bench, "bivlc", "group", MICRO) is not None
    ]


LAYOUT = RunLayout(
    cite="BiVLC Table 2",
    title="generative models",
    lead=("model", "method"),
    columns=_columns,
    rows=_rows,
    note="BiVLC I2T, T2I, Group on all items; {columns[0]}: the same model's accuracy on all its "
    "items pooled (the paper does not say which average). Random: chance, as in the table; its "
    "Human row and parameter counts are not reproduced.",
    per_benchmark=("bivlc",),
    fixed=(("Random", "chance", *(f"{v:.2f}" for v in RANDOM)),),
)

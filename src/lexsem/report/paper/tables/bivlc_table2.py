"""BiVLC Table 2: existing models on SugarCrepe and BiVLC ("BiVLC: Extending Vision-Language
Compositionality Evaluation with Text-to-Image Retrieval", §4, Table 2).

Rows: the four contrastive models and both VQAScore models. Left out: Human and Random (not
models) and Open CapPa (no lexsem backend; its row is not legible in the text we have).

`LAYOUT`: the report's table of generative runs (VQAScore, VGPTScore) in the same columns, one
row per model under the table's Random row (chance, by definition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells, find_result
from lexsem.report.paper.generative_runs import by_model, method_of
from lexsem.report.paper.layout import RunColumn, RunLayout, RunRow, benchmarks_of
from lexsem.report.paper.tables.bivlc import MAIN, PAPER, SUGARCREPE, checkpoint
from lexsem.results.schema import RunRecord
from lexsem.stats.bootstrap import MICRO

ROWS = (
    ModelRow(name="CLIP", spec="openclip:ViT-B-32-quickgelu/openai"),
    ModelRow(name="CLIP_COCO", needs=checkpoint("imirandam/CLIP_COCO")),
    ModelRow(
        name="NEGCLIP",
        needs="NegCLIP's checkpoint file (vinid/neg_clip), run as openclip:ViT-B-32-quickgelu@PATH",
    ),
    ModelRow(name="GNM", needs="the Generative Negative Mining checkpoint (no lexsem spec)"),
    ModelRow(name="VQAScore-XL", spec="vqa:zhiqiulin/clip-flant5-xl"),
    ModelRow(name="VQAScore-XXL", spec="vqa:zhiqiulin/clip-flant5-xxl"),
)

# SugarCrepe, BiVLC I2T, T2I, Group
VALUES = {
    "CLIP": (76.56, 75.83, 52.40, 49.06),
    "CLIP_COCO": (84.66, 82.75, 63.89, 60.96),
    "NEGCLIP": (85.64, 80.74, 61.95, 58.75),
    "GNM": (81.83, 81.32, 60.86, 57.96),
    "VQAScore-XL": (90.85, 81.96, 76.61, 70.20),
    "VQAScore-XXL": (93.72, 86.16, 81.93, 76.47),
}

TABLE = PaperTable(
    name="bivlc_table2",
    paper=PAPER,
    table="Table 2",
    description="SugarCrepe accuracy and BiVLC I2T, T2I, Group (%), contrastive and generative",
    included="6 of 7 model rows (not Open CapPa); Human and Random are not models",
    rows=ROWS,
    cells=cells((SUGARCREPE, *MAIN), VALUES),
)

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
        RunRow(
            (labels[runs[0].run_id], method_of(runs[0].model) or ""),
            tuple(runs),
            labels[runs[0].run_id],
        )
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

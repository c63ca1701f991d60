"""BiVLC Table 4: multimodal models on BiVLC per category of negative caption, REPLACE, SWAP
and ADD ("BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image
Retrieval", §5.3, Table 4). A category's I2T, T2I and Group pool its items (lexsem's `_replace`,
`_swap`, `_add` rows of a BiVLC run).

Rows: all nine models (Random is chance, not a model). Open CapPa has no lexsem backend.
"""

from __future__ import annotations

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.report.paper.tables.bivlc import PAPER
from lexsem.report.paper.tables.bivlc_table2 import ROWS as TABLE2_ROWS
from lexsem.report.paper.tables.bivlc_table3 import ROWS as TABLE3_ROWS

CATEGORIES = (("replace", "REPLACE"), ("swap", "SWAP"), ("add", "ADD"))
COLUMNS = tuple(
    Column(benchmark="bivlc", task="bivlc", metric=m, subset=f"_{c}", header=f"{h} {mh}")
    for c, h in CATEGORIES
    for m, mh in (("i2t", "I2T"), ("t2i", "T2I"), ("group", "Group"))
)

ROWS = (
    *TABLE3_ROWS,
    ModelRow(name="Open CapPa", needs="the open CapPa captioner (no lexsem backend runs it)"),
    *TABLE2_ROWS[4:],
)

# REPLACE, SWAP, ADD: I2T, T2I, Group each
VALUES = {
    "CLIP": (82.09, 60.36, 57.27, 46.52, 16.16, 13.65, 70.32, 44.63, 39.58),
    "CLIP_COCO": (87.99, 72.42, 69.94, 51.53, 25.07, 20.89, 83.16, 55.58, 51.58),
    "NEGCLIP": (86.37, 70.80, 68.03, 47.08, 24.23, 18.66, 81.26, 51.37, 48.00),
    "GNM": (86.14, 68.70, 65.75, 50.70, 17.83, 15.88, 83.16, 58.74, 55.37),
    "CLIP_TROHN-TEXT": (83.61, 70.03, 65.84, 54.32, 25.35, 20.61, 72.21, 55.37, 48.42),
    "CLIP_TROHN-IMG": (91.62, 79.18, 76.61, 62.40, 32.03, 27.86, 94.74, 69.47, 68.00),
    "Open CapPa": (70.32, 62.79, 53.03, 40.95, 30.64, 20.61, 14.74, 46.32, 9.263),
    "VQAScore-XL": (85.95, 84.18, 78.28, 65.18, 58.77, 48.75, 77.05, 56.63, 50.74),
    "VQAScore-XXL": (89.85, 88.33, 83.85, 72.14, 66.30, 56.82, 80.42, 65.47, 58.74),
}

TABLE = PaperTable(
    name="bivlc_table4",
    paper=PAPER,
    table="Table 4",
    description="BiVLC I2T, T2I, Group (%) per category: REPLACE, SWAP, ADD (items pooled)",
    included="all 9 model rows (Random is chance); 3 have a lexsem spec",
    rows=ROWS,
    cells=cells(COLUMNS, VALUES),
)

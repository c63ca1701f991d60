"""BiVLC Table 3: contrastive models of one size on SugarCrepe and BiVLC, with the finer
retrieval metrics ("BiVLC: Extending Vision-Language Compositionality Evaluation with
Text-to-Image Retrieval", §5.3, Table 3). All six model rows (Random is chance, not a model).
"""

from __future__ import annotations

from lexsem.report.paper.facts import ModelRow, PaperTable, cells
from lexsem.report.paper.tables.bivlc import FINER, MAIN, PAPER, SUGARCREPE, checkpoint
from lexsem.report.paper.tables.bivlc_table2 import ROWS as TABLE2_ROWS

ROWS = (
    *TABLE2_ROWS[:4],
    ModelRow(name="CLIP_TROHN-TEXT", needs=checkpoint("imirandam/CLIP_TROHN-Text")),
    ModelRow(name="CLIP_TROHN-IMG", needs=checkpoint("imirandam/CLIP_TROHN-Img")),
)

# SugarCrepe; BiVLC I2T, T2I, Group; Ipos2T, Ineg2T, Tpos2I, Tneg2I
VALUES = {
    "CLIP": (76.56, 75.83, 52.40, 49.06, 84.32, 89.50, 69.21, 82.82),
    "CLIP_COCO": (84.66, 82.75, 63.89, 60.96, 89.06, 91.75, 72.79, 90.86),
    "NEGCLIP": (85.64, 80.74, 61.95, 58.75, 89.53, 89.53, 70.10, 91.34),
    "GNM": (81.83, 81.32, 60.86, 57.96, 88.00, 91.24, 80.33, 80.33),
    "CLIP_TROHN-TEXT": (93.40, 78.18, 62.19, 57.48, 93.25, 83.87, 71.05, 90.59),
    "CLIP_TROHN-IMG": (89.40, 88.54, 71.84, 69.25, 92.12, 95.33, 81.45, 90.15),
}

TABLE = PaperTable(
    name="bivlc_table3",
    paper=PAPER,
    table="Table 3",
    description="SugarCrepe; BiVLC I2T, T2I, Group and Ipos2T, Ineg2T, Tpos2I, Tneg2I (%)",
    included="all 6 model rows (Random is chance)",
    rows=ROWS,
    cells=cells((SUGARCREPE, *MAIN, *FINER), VALUES),
)

"""BiVLC Table 2: existing models on SugarCrepe and BiVLC ("BiVLC: Extending Vision-Language
Compositionality Evaluation with Text-to-Image Retrieval", §4, Table 2).

Rows: the four contrastive models and both VQAScore models. Left out: Human and Random (not
models) and Open CapPa (no lexsem backend; its row is not legible in the text we have).
"""

from __future__ import annotations

from lexsem.reproduce.facts import ModelRow, PaperTable, cells
from lexsem.reproduce.tables.bivlc_columns import MAIN, PAPER, SUGARCREPE, checkpoint

ROWS = (
    ModelRow(name="CLIP", spec="openclip:ViT-B-32-quickgelu/openai"),
    ModelRow(name="CLIP_COCO", needs=checkpoint("imirandam/CLIP_COCO")),
    ModelRow(
        name="NEGCLIP",
        needs="NegCLIP's checkpoint file (vinid/neg_clip), run as openclip:ViT-B-32-quickgelu/PATH",
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

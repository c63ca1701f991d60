"""SugarCrepe's table of text-only models and 17 pre-trained CLIP models ("SugarCrepe: Fixing
Hackable Benchmarks for Vision-Language Compositionality", §5; the table is printed in the
authors' repository, RAIVNLab/sugar-crepe, `assets/sugarcrepe_eval.png`). Recall@1 (%) per
subset; `main_eval.py` of that repository names each model's open_clip tag
(`lexsem.report.paper.tables.openclip_models`).

Rows: all 19 (Human is not a model). The text-only models run lexsem's blind task (C+ scores
above C-). The paper's swap_obj has 246 items, the public file 245 (docs/fidelity.md).
"""

from __future__ import annotations

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.report.paper.tables.openclip_models import TAGS, openclip_rows

PAPER = "SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality"
SUBSETS = (
    ("replace_obj", "Replace Object"),
    ("replace_att", "Replace Attribute"),
    ("replace_rel", "Replace Relation"),
    ("swap_obj", "Swap Object"),
    ("swap_att", "Swap Attribute"),
    ("add_obj", "Add Object"),
    ("add_att", "Add Attribute"),
)


def _columns(task: str, metric: str) -> tuple[Column, ...]:
    return tuple(
        Column(benchmark="sugarcrepe", task=task, metric=metric, subset=s, header=h)
        for s, h in SUBSETS
    )


BLIND_ROWS = (
    ModelRow(name="Vera", spec="vera:liujch1998/vera"),
    ModelRow(name="Grammar", spec="cola:textattack/distilbert-base-uncased-CoLA"),
)
CLIP_ROWS = openclip_rows(*(name for name, _ in TAGS))

# Replace Object, Attribute, Relation; Swap Object, Attribute; Add Object, Attribute
BLIND = {
    "Vera": (49.39, 49.62, 49.36, 49.19, 49.40, 49.42, 49.57),
    "Grammar": (50.00, 50.00, 50.00, 50.00, 50.00, 50.00, 50.00),
}
CLIP = {
    "RN50": (91.77, 80.58, 69.99, 61.79, 68.47, 74.54, 69.65),
    "RN101": (92.49, 83.88, 67.07, 56.50, 65.92, 75.46, 70.09),
    "ViT-B-32": (90.92, 80.08, 69.20, 61.38, 63.96, 77.21, 68.79),
    "RN50x4": (92.68, 82.99, 67.57, 65.04, 63.36, 79.34, 70.09),
    "RN50x16": (93.46, 82.11, 69.20, 63.01, 65.77, 80.70, 75.87),
    "ViT-L-14": (94.07, 79.19, 65.15, 60.16, 62.31, 78.32, 71.53),
    "RN50x64": (94.49, 83.50, 70.63, 61.79, 66.67, 83.27, 73.99),
    "roberta-ViT-B-32": (92.86, 84.90, 72.40, 63.01, 71.02, 87.34, 79.91),
    "ViT-H-14": (96.49, 84.77, 71.76, 67.48, 73.12, 92.05, 85.84),
    "ViT-g-14": (95.76, 85.03, 72.40, 63.01, 71.17, 91.51, 82.08),
    "ViT-bigG-14": (96.67, 88.07, 74.75, 62.20, 74.92, 92.19, 84.54),
    "xlm-roberta-base-ViT-B-32": (93.16, 84.01, 69.20, 63.41, 67.57, 87.78, 81.07),
    "xlm-roberta-large-ViT-H-14": (96.85, 86.04, 72.05, 63.82, 72.07, 93.11, 86.13),
    "small:ViT-B-32": (56.90, 56.85, 51.99, 50.81, 50.00, 53.93, 60.55),
    "medium:ViT-B-32": (77.00, 69.54, 57.68, 57.72, 57.06, 66.73, 64.88),
    "large:ViT-B-16": (92.68, 79.82, 63.94, 56.10, 57.66, 84.34, 78.61),
    "xlarge:ViT-L-14": (95.52, 84.52, 69.99, 65.04, 66.82, 91.03, 84.97),
}

TABLE = PaperTable(
    name="sugarcrepe",
    paper=PAPER,
    table="the pre-trained CLIP models table (repository README)",
    description="text-only models (blind) and pre-trained CLIP models, Recall@1 (%) per subset",
    included="all 19 model rows (Human is not a model)",
    rows=BLIND_ROWS + CLIP_ROWS,
    cells=cells(_columns("blind", "blind"), BLIND) + cells(_columns("pair", "acc"), CLIP),
)

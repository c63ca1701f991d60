"""SugarCrepe++ Table 2: vision-language models, ITT and TOT ("SUGARCREPE++ Dataset:
Vision-Language Model Sensitivity to Semantic and Lexical Alterations", §3.2, Table 2; the
checkpoints are listed in App. K.3).

Rows: all 13 models of the table (the Human row is not a model). CLIP, RoBERTa-ViT-B/32, ALIGN,
FLAVA, BLIP-2 and AltCLIP run as the paper's checkpoints; BLIP runs the closest public Hub
checkpoint (the paper's is LAVIS's base model); ALIP, ALBEF, ViLT's pre-trained ITM head, SegCLIP
and the X-VLMs have no lexsem backend and say what they need. ViLT has no TOT (one stream).
"""

from __future__ import annotations

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.report.paper.tables.scpp import PAPER, SUBSETS

COLUMNS = tuple(
    Column(
        benchmark="sugarcrepe_pp", task=task, metric=task, subset=s, header=f"{h} {task.upper()}"
    )
    for s, h in SUBSETS.items()
    for task in ("itt", "tot")
)

_LAVIS = "its LAVIS checkpoint (no lexsem backend runs LAVIS models)"
_DRIVE = "the authors' checkpoint from Google Drive (no lexsem backend runs it)"

ROWS = (
    ModelRow(name="CLIP", spec="clip:openai/clip-vit-base-patch32"),
    ModelRow(name="RoBERTa-ViT-B/32", spec="openclip:roberta-ViT-B-32/laion2b_s12b_b32k"),
    ModelRow(name="ALIGN", spec="clip:kakaobrain/align-base"),
    ModelRow(name="ALIP", needs=_DRIVE),
    ModelRow(name="FLAVA", spec="clip:facebook/flava-full"),
    ModelRow(name="ALBEF", needs=_LAVIS),
    ModelRow(
        name="BLIP",
        spec="clip:Salesforce/blip-itm-base-coco",
        note="the paper's BLIP is LAVIS's pre-trained base model; this is the COCO-retrieval one",
    ),
    ModelRow(name="BLIP2", spec="clip:Salesforce/blip2-itm-vit-g"),
    ModelRow(name="ViLT", needs="ViLT's pre-trained ITM head (dandelin/vilt-b32-mlm), not in itm:"),
    ModelRow(name="AltCLIP", spec="clip:BAAI/AltCLIP"),
    ModelRow(name="SegCLIP", needs=_DRIVE),
    ModelRow(name="XVLM-4M", needs=_DRIVE),
    ModelRow(name="XVLM-16M", needs=_DRIVE),
)

# per subset (Swap Object, Swap Attribute, Replace Object, Replace Attribute, Replace
# Relation): ITT, TOT
VALUES = {
    "CLIP": (45.18, 19.74, 45.21, 33.03, 86.80, 83.72, 65.61, 59.14, 56.26, 38.62),
    "RoBERTa-ViT-B/32": (44.30, 29.39, 56.32, 52.66, 89.04, 94.55, 74.49, 80.46, 59.39, 57.75),
    "ALIGN": (41.23, 25.43, 51.90, 41.40, 90.19, 84.62, 69.92, 69.04, 51.71, 45.23),
    "ALIP": (36.84, 20.18, 46.12, 28.77, 71.49, 50.06, 54.95, 34.52, 47.80, 23.47),
    "FLAVA": (54.39, 45.18, 59.21, 57.84, 89.59, 94.43, 73.35, 72.46, 60.10, 57.97),
    "ALBEF": (28.94, 10.09, 36.83, 18.87, 76.27, 55.57, 56.35, 30.33, 47.80, 30.65),
    "BLIP": (47.37, 31.14, 60.58, 52.97, 92.62, 89.04, 72.08, 75.13, 56.76, 57.47),
    "BLIP2": (35.09, 21.49, 37.60, 29.98, 89.41, 72.58, 62.82, 64.47, 53.27, 43.47),
    "ViLT": (35.23, None, 52.20, None, 91.10, None, 55.33, None, 37.48, None),
    "AltCLIP": (42.54, 25.43, 45.81, 35.77, 92.61, 93.46, 71.06, 74.62, 57.25, 56.69),
    "SegCLIP": (45.61, 25.44, 46.12, 40.64, 85.90, 95.16, 62.69, 67.89, 54.84, 41.96),
    "XVLM-4M": (31.14, 10.96, 36.52, 19.48, 79.42, 67.07, 59.39, 40.74, 46.23, 29.23),
    "XVLM-16M": (34.21, 18.86, 40.33, 31.05, 90.81, 92.07, 68.02, 70.43, 57.47, 47.87),
}

TABLE = PaperTable(
    name="scpp_table2",
    paper=PAPER,
    table="Table 2",
    description="vision-language models, ITT and TOT accuracy (%) per subset",
    included="all 13 model rows (not Human); 7 have a lexsem spec",
    rows=ROWS,
    cells=cells(COLUMNS, VALUES),
)

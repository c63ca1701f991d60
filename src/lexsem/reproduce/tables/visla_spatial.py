"""VISLA spatial: unimodal language models (Tables 2 and 3, the Spatial columns) and
vision-language models (Table 9) on the spatial triplets ("VISLA Benchmark: Evaluating Embedding
Sensitivity to Semantic and Lexical Alterations", §4.2, §4.4, App. C.5). Rows: `visla_models`.
The public file's 640 complete rows are not exactly the paper's items (docs/fidelity.md).
"""

from __future__ import annotations

from lexsem.reproduce.facts import PaperTable, cells
from lexsem.reproduce.tables.visla_columns import text_columns, vlm_columns
from lexsem.reproduce.tables.visla_models import PAPER, ULM_ROWS, VLM_ROWS

# Table 2 (Spatial Acc = T2T), Table 3 (Spatial P1-N, P2-N)
TEXT = {
    "All-MiniLM-L6-v2": (43.75, 54.38, 46.56),
    "BGE-small-en-v1.5": (47.97, 53.28, 52.81),
    "All-MiniLM-L12-v2": (47.50, 53.75, 50.31),
    "GTE-small": (48.13, 54.69, 52.19),
    "BGE-base-en-v1.5": (50.16, 54.38, 55.78),
    "Sentence-T5-base": (51.09, 55.00, 58.59),
    "GTE-base": (50.78, 55.63, 54.22),
    "Clip-ViT-B-32-multilingual-v1": (38.13, 52.97, 45.47),
    "Clip-ViT-B-32": (30.16, 52.66, 35.78),
    "UAE-Large-V1": (49.84, 54.69, 58.59),
    "GTE-large": (49.06, 55.16, 57.66),
    "All-RoBERTa-large-v1": (47.03, 55.00, 52.50),
    "Stsb-RoBERTa-large": (50.78, 54.22, 66.88),
    "LaBSE": (44.53, 53.28, 45.94),
    "Sentence-T5-xl": (51.09, 55.31, 63.75),
    "E5-Mistral-7b-instruct": (52.50, 55.31, 60.16),
}

# Table 9: P1-N, P2-N (image query), I2T, T2T ("–": no text tower of its own)
VLM = {
    "RN50": (64.84, 60.15, 45.31, 33.28),
    "RN101": (62.81, 57.50, 43.90, 31.09),
    "CLIP-ViT-B-32": (63.12, 60.63, 44.69, 30.16),
    "RN50x4": (63.13, 61.56, 45.94, 32.81),
    "RN50x16": (59.84, 58.44, 42.66, 34.84),
    "CLIP-ViT-L-14": (62.97, 58.75, 42.50, 27.19),
    "RN50x64": (59.22, 56.25, 40.31, 23.13),
    "ALIGN": (53.13, 52.98, 35.16, 34.53),
    "ALBEF": (64.38, 60.31, 42.66, 25.78),
    "FLAVA": (43.43, 41.25, 25.31, 28.44),
    "BLIP-ITM-COCO": (46.40, 41.56, 33.59, None),
    "BLIP2": (55.78, 58.28, 41.09, 40.62),
    "XVLM-16M": (66.56, 64.38, 50.31, 31.41),
    "ViLT-ITR-COCO": (69.06, 62.97, 50.16, None),
    "AltCLIP": (63.59, 62.19, 45.00, 35.16),
    "RoBERTa-ViT-B-32": (55.00, 55.47, 37.66, 36.25),
    "ViT-H-14": (56.41, 57.50, 39.84, 30.02),
    "ViT-g-14": (57.50, 60.31, 40.47, 32.50),
    "ViT-bigG-14": (57.03, 56.41, 40.48, 35.31),
    "xlm-roberta-base-ViT-B-32": (57.97, 54.84, 37.97, 32.66),
    "xlm-roberta-large-ViT-H-14": (54.84, 55.00, 37.50, 34.38),
    "large:ViT-B-16": (56.41, 50.31, 33.91, 22.03),
    "xlarge:ViT-L-14": (55.63, 55.94, 38.13, 27.97),
    "NegCLIP": (57.34, 54.38, 34.84, 29.21),
}

TABLE = PaperTable(
    name="visla_spatial",
    paper=PAPER,
    table="Tables 2, 3 and 9 (spatial)",
    description="spatial VISLA: text models T2T, P1-N, P2-N; VLMs P1-N, P2-N, I2T, T2T (%)",
    included="16 of 20 text-model rows and 24 of 33 VLM rows (see lexsem.reproduce.tables."
    "visla_models)",
    rows=ULM_ROWS + VLM_ROWS,
    cells=cells(text_columns("visla_spatial", "spatial"), TEXT)
    + cells(vlm_columns("visla_spatial", "spatial"), VLM),
)

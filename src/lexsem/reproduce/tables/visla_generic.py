"""VISLA generic: unimodal language models (Tables 2 and 3, the Generic columns) and
vision-language models (Table 8) on the 973 generic triplets ("VISLA Benchmark: Evaluating
Embedding Sensitivity to Semantic and Lexical Alterations", §4.2, §4.4, App. C.5). Rows:
`visla_models`."""

from __future__ import annotations

from lexsem.reproduce.facts import PaperTable, cells
from lexsem.reproduce.tables.visla_columns import text_columns, vlm_columns
from lexsem.reproduce.tables.visla_models import PAPER, ULM_ROWS, VLM_ROWS

# Table 2 (Generic Acc = T2T), Table 3 (Generic P1-N, P2-N)
TEXT = {
    "All-MiniLM-L6-v2": (58.89, 93.22, 60.12),
    "BGE-small-en-v1.5": (72.05, 93.73, 73.48),
    "All-MiniLM-L12-v2": (66.19, 94.35, 66.91),
    "GTE-small": (64.23, 94.66, 64.85),
    "BGE-base-en-v1.5": (72.35, 94.14, 73.38),
    "Sentence-T5-base": (71.22, 94.24, 72.05),
    "GTE-base": (67.42, 94.55, 67.73),
    "Clip-ViT-B-32-multilingual-v1": (39.36, 78.83, 40.90),
    "Clip-ViT-B-32": (34.64, 81.71, 35.46),
    "UAE-Large-V1": (72.97, 94.14, 74.20),
    "GTE-large": (68.24, 94.76, 68.65),
    "All-RoBERTa-large-v1": (71.94, 93.94, 72.97),
    "Stsb-RoBERTa-large": (70.81, 93.01, 71.63),
    "LaBSE": (33.92, 84.89, 35.05),
    "Sentence-T5-xl": (72.05, 94.55, 72.66),
    "E5-Mistral-7b-instruct": (78.21, 95.58, 78.93),
}

# Table 8: P1-N, P2-N (image query), I2T, T2T ("–": no text tower of its own)
VLM = {
    "RN50": (70.81, 66.50, 54.16, 35.56),
    "RN101": (67.42, 66.70, 53.44, 35.77),
    "CLIP-ViT-B-32": (68.85, 67.63, 54.88, 34.64),
    "RN50x4": (66.29, 65.78, 52.00, 32.58),
    "RN50x16": (69.68, 63.62, 50.98, 33.40),
    "CLIP-ViT-L-14": (64.13, 67.63, 52.11, 34.94),
    "RN50x64": (68.76, 65.36, 52.42, 33.40),
    "ALIGN": (67.01, 62.90, 50.46, 42.34),
    "ALBEF": (76.57, 55.09, 49.54, 28.26),
    "FLAVA": (73.38, 71.22, 59.82, 56.32),
    "BLIP-ITM-COCO": (73.38, 63.01, 58.37, None),
    "BLIP2": (62.28, 65.16, 51.70, 41.11),
    "XVLM-16M": (79.03, 65.36, 59.40, 47.59),
    "ViLT-ITR-COCO": (77.18, 67.42, 61.05, None),
    "AltCLIP": (73.18, 66.29, 57.76, 53.44),
    "RoBERTa-ViT-B-32": (71.42, 67.83, 58.89, 53.34),
    "ViT-H-14": (69.58, 62.38, 53.03, 47.48),
    "ViT-g-14": (71.74, 64.23, 55.40, 49.23),
    "ViT-bigG-14": (74.62, 64.34, 56.84, 50.87),
    "xlm-roberta-base-ViT-B-32": (67.12, 62.28, 52.11, 55.09),
    "xlm-roberta-large-ViT-H-14": (70.92, 63.10, 55.40, 56.53),
    "large:ViT-B-16": (65.05, 60.74, 49.43, 35.97),
    "xlarge:ViT-L-14": (69.89, 64.24, 54.47, 46.25),
    "NegCLIP": (73.69, 58.79, 52.83, 48.72),
}

TABLE = PaperTable(
    name="visla_generic",
    paper=PAPER,
    table="Tables 2, 3 and 8 (generic)",
    description="generic VISLA: text models T2T, P1-N, P2-N; VLMs P1-N, P2-N, I2T, T2T (%)",
    included="16 of 20 text-model rows and 24 of 33 VLM rows (see lexsem.reproduce.tables."
    "visla_models)",
    rows=ULM_ROWS + VLM_ROWS,
    cells=cells(text_columns("visla_generic", "generic"), TEXT)
    + cells(vlm_columns("visla_generic", "generic"), VLM),
)

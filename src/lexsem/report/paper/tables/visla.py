"""VISLA's tables ("VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and Lexical
Alterations", §4.2, §4.4, App. C.2-C.5), one per benchmark: `GENERIC` (the 973 generic
triplets: Tables 2 and 3, the Generic columns, and Table 8) and `SPATIAL` (the spatial
triplets: the Spatial columns and Table 9; the public file's 640 complete rows are not exactly
the paper's items, docs/fidelity.md). Rows: the unimodal language models of Tables 2, 3 and 5
(T2T, and after VISLA's Levenshtein reorder P1-N and P2-N) and the vision-language models of
Tables 8 and 9 (P1-N, P2-N and I2T with the image as query, and T2T of their text towers).

Left out: Instructor-large (both rows: INSTRUCTOR pools without its instruction tokens, which a
lexsem spec cannot express) and the two AnglE models (pooling and prompt not stated); of the
VLMs, BLIP-Caption-COCO, SegCLIP, XVLM-4M, the fine-tuned X-VLMs, ViLT, ALIP, CLIP-SVLC,
BLIP-SGVL and CyCLIP (no lexsem backend runs them). ALBEF, XVLM-16M and NegCLIP are kept as
examples of rows that say what they need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.report.paper.tables.openclip_models import openclip_rows
from lexsem.report.paper.tables.text_models import text_rows

PAPER = "VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and Lexical Alterations"

_DRIVE = "the authors' checkpoint (no lexsem backend runs it)"

VLM_ROWS = (
    *openclip_rows("RN50", "RN101"),
    ModelRow(name="CLIP-ViT-B-32", spec="clip:openai/clip-vit-base-patch32"),
    *openclip_rows("RN50x4", "RN50x16"),
    ModelRow(name="CLIP-ViT-L-14", spec="clip:openai/clip-vit-large-patch14"),
    *openclip_rows("RN50x64"),
    ModelRow(name="ALIGN", spec="clip:kakaobrain/align-base"),
    ModelRow(name="ALBEF", needs="its LAVIS checkpoint (no lexsem backend runs LAVIS models)"),
    ModelRow(name="FLAVA", spec="clip:facebook/flava-full"),
    ModelRow(name="BLIP-ITM-COCO", spec="itm:Salesforce/blip-itm-base-coco"),
    ModelRow(name="BLIP2", spec="clip:Salesforce/blip2-itm-vit-g"),
    ModelRow(name="XVLM-16M", needs=_DRIVE),
    ModelRow(name="ViLT-ITR-COCO", spec="itm:dandelin/vilt-b32-finetuned-coco"),
    ModelRow(name="AltCLIP", spec="clip:BAAI/AltCLIP"),
    *openclip_rows(
        "RoBERTa-ViT-B-32",
        "ViT-H-14",
        "ViT-g-14",
        "ViT-bigG-14",
        "xlm-roberta-base-ViT-B-32",
        "xlm-roberta-large-ViT-H-14",
        "large:ViT-B-16",
        "xlarge:ViT-L-14",
    ),
    ModelRow(
        name="NegCLIP",
        needs="NegCLIP's checkpoint file (vinid/neg_clip), run as openclip:ViT-B-32-quickgelu@PATH",
    ),
)

# Tables 2 and 3: T2T (Acc), P1-N, P2-N; generic, then spatial
TEXT = {
    "All-MiniLM-L6-v2": (58.89, 93.22, 60.12, 43.75, 54.38, 46.56),
    "BGE-small-en-v1.5": (72.05, 93.73, 73.48, 47.97, 53.28, 52.81),
    "All-MiniLM-L12-v2": (66.19, 94.35, 66.91, 47.50, 53.75, 50.31),
    "GTE-small": (64.23, 94.66, 64.85, 48.13, 54.69, 52.19),
    "BGE-base-en-v1.5": (72.35, 94.14, 73.38, 50.16, 54.38, 55.78),
    "Sentence-T5-base": (71.22, 94.24, 72.05, 51.09, 55.00, 58.59),
    "GTE-base": (67.42, 94.55, 67.73, 50.78, 55.63, 54.22),
    "Clip-ViT-B-32-multilingual-v1": (39.36, 78.83, 40.90, 38.13, 52.97, 45.47),
    "Clip-ViT-B-32": (34.64, 81.71, 35.46, 30.16, 52.66, 35.78),
    "UAE-Large-V1": (72.97, 94.14, 74.20, 49.84, 54.69, 58.59),
    "GTE-large": (68.24, 94.76, 68.65, 49.06, 55.16, 57.66),
    "All-RoBERTa-large-v1": (71.94, 93.94, 72.97, 47.03, 55.00, 52.50),
    "Stsb-RoBERTa-large": (70.81, 93.01, 71.63, 50.78, 54.22, 66.88),
    "LaBSE": (33.92, 84.89, 35.05, 44.53, 53.28, 45.94),
    "Sentence-T5-xl": (72.05, 94.55, 72.66, 51.09, 55.31, 63.75),
    "E5-Mistral-7b-instruct": (78.21, 95.58, 78.93, 52.50, 55.31, 60.16),
}

# Tables 8 (generic) and 9 (spatial): P1-N, P2-N (image query), I2T, T2T ("–": no text
# tower of its own)
VLM = {
    "RN50": (70.81, 66.50, 54.16, 35.56, 64.84, 60.15, 45.31, 33.28),
    "RN101": (67.42, 66.70, 53.44, 35.77, 62.81, 57.50, 43.90, 31.09),
    "CLIP-ViT-B-32": (68.85, 67.63, 54.88, 34.64, 63.12, 60.63, 44.69, 30.16),
    "RN50x4": (66.29, 65.78, 52.00, 32.58, 63.13, 61.56, 45.94, 32.81),
    "RN50x16": (69.68, 63.62, 50.98, 33.40, 59.84, 58.44, 42.66, 34.84),
    "CLIP-ViT-L-14": (64.13, 67.63, 52.11, 34.94, 62.97, 58.75, 42.50, 27.19),
    "RN50x64": (68.76, 65.36, 52.42, 33.40, 59.22, 56.25, 40.31, 23.13),
    "ALIGN": (67.01, 62.90, 50.46, 42.34, 53.13, 52.98, 35.16, 34.53),
    "ALBEF": (76.57, 55.09, 49.54, 28.26, 64.38, 60.31, 42.66, 25.78),
    "FLAVA": (73.38, 71.22, 59.82, 56.32, 43.43, 41.25, 25.31, 28.44),
    "BLIP-ITM-COCO": (73.38, 63.01, 58.37, None, 46.40, 41.56, 33.59, None),
    "BLIP2": (62.28, 65.16, 51.70, 41.11, 55.78, 58.28, 41.09, 40.62),
    "XVLM-16M": (79.03, 65.36, 59.40, 47.59, 66.56, 64.38, 50.31, 31.41),
    "ViLT-ITR-COCO": (77.18, 67.42, 61.05, None, 69.06, 62.97, 50.16, None),
    "AltCLIP": (73.18, 66.29, 57.76, 53.44, 63.59, 62.19, 45.00, 35.16),
    "RoBERTa-ViT-B-32": (71.42, 67.83, 58.89, 53.34, 55.00, 55.47, 37.66, 36.25),
    "ViT-H-14": (69.58, 62.38, 53.03, 47.48, 56.41, 57.50, 39.84, 30.02),
    "ViT-g-14": (71.74, 64.23, 55.40, 49.23, 57.50, 60.31, 40.47, 32.50),
    "ViT-bigG-14": (74.62, 64.34, 56.84, 50.87, 57.03, 56.41, 40.48, 35.31),
    "xlm-roberta-base-ViT-B-32": (67.12, 62.28, 52.11, 55.09, 57.97, 54.84, 37.97, 32.66),
    "xlm-roberta-large-ViT-H-14": (70.92, 63.10, 55.40, 56.53, 54.84, 55.00, 37.50, 34.38),
    "large:ViT-B-16": (65.05, 60.74, 49.43, 35.97, 56.41, 50.31, 33.91, 22.03),
    "xlarge:ViT-L-14": (69.89, 64.24, 54.47, 46.25, 55.63, 55.94, 38.13, 27.97),
    "NegCLIP": (73.69, 58.79, 52.83, 48.72, 57.34, 54.38, 34.84, 29.21),
}


def _text_columns(benchmark: str, subset: str) -> tuple[Column, ...]:
    """T2T, P1-N, P2-N of a text encoder (Tables 2 and 3)."""
    return tuple(
        Column(benchmark=benchmark, task="t2t", metric=m, subset=subset, header=h)
        for m, h in (("t2t", "T2T"), ("p1n", "P1-N"), ("p2n", "P2-N"))
    )


def _vlm_columns(benchmark: str, subset: str) -> tuple[Column, ...]:
    """P1-N, P2-N, I2T (image query) and T2T (text towers) of a VLM (Tables 8 and 9)."""
    image = tuple(
        Column(benchmark=benchmark, task="i2t", metric=m, subset=subset, header=h)
        for m, h in (("i2t_p1n", "P1-N (image)"), ("i2t_p2n", "P2-N (image)"), ("i2t", "I2T"))
    )
    return (*image, _text_columns(benchmark, subset)[0])


def _half(
    values: Mapping[str, Sequence[float | None]], k: int
) -> dict[str, tuple[float | None, ...]]:
    """The generic (k = 0) or spatial (k = 1) half of each row."""
    n = len(next(iter(values.values()))) // 2
    return {model: tuple(v[k * n : (k + 1) * n]) for model, v in values.items()}


def _table(kind: str, tables: str, k: int) -> PaperTable:
    benchmark = f"visla_{kind}"
    return PaperTable(
        name=benchmark,
        paper=PAPER,
        table=f"Tables 2, 3 and {tables} ({kind})",
        description=f"{kind} VISLA: text models T2T, P1-N, P2-N; VLMs P1-N, P2-N, I2T, T2T (%)",
        included="16 of 20 text-model rows and 24 of 34 VLM rows (see lexsem.report.paper.tables."
        "visla)",
        rows=text_rows(TEXT) + VLM_ROWS,
        cells=cells(_text_columns(benchmark, kind), _half(TEXT, k))
        + cells(_vlm_columns(benchmark, kind), _half(VLM, k)),
    )


GENERIC = _table("generic", "8", 0)
SPATIAL = _table("spatial", "9", 1)

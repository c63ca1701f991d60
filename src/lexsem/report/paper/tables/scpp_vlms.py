"""SugarCrepe++'s tables of vision-language models, ITT and TOT per subset ("SUGARCREPE++ Dataset:
Vision-Language Model Sensitivity to Semantic and Lexical Alterations"; the checkpoints are
listed in App. K.3), as data: each table's rows and its numbers as the paper prints them (one
value per column of `COLUMNS`: per subset, ITT then TOT), made into a `PaperTable` by `_table`.

- `TABLE2` (§3.2, Table 2): all 13 models (the Human row is not a model). CLIP,
  RoBERTa-ViT-B/32, ALIGN, FLAVA, BLIP-2 and AltCLIP run as the paper's checkpoints; BLIP runs
  the closest public Hub checkpoint (the paper's is LAVIS's base model); ALIP, ALBEF, ViLT's
  pre-trained ITM head, SegCLIP and the X-VLMs have no lexsem backend and say what they need.
  ViLT has no TOT (one stream).
- `TABLE3` (§3.1, Table 3): the three models fine-tuned for image-text retrieval (the table's
  ViLT and XVLM-16M rows repeat Table 2's). ViLT-ITR-COCO runs as its Hub checkpoint's
  retrieval head and has no TOT (one stream); the XVLM checkpoints have no lexsem backend.
- `TABLE4` (§3.1, Table 4): methods that improve compositionality, CLIP the baseline; all five
  models (the Human row is not a model). CLIP runs as in Table 2; NegCLIP is an open_clip
  ViT-B/32 checkpoint file; CLIP-SVLC, BLIP-SGVL and CyCLIP are the authors' Google Drive
  checkpoints for their own code. BLIP-SGVL has no TOT.
- `TABLE12` (§3.1, Table 5, and App. E.2, Tables 11 and 12): variants of CLIP, all 15 rows of
  Table 12 (Table 5 prints 7 of them). The numbers are Table 12's; Table 5 prints the same but
  for ViT-bigG/14's Replace Attribute ITT, 76.41 there and 76.40 in Table 12. The paper takes
  the weights from OpenCLIP (App. K.3) without naming a pretrained tag; the tags here are
  SugarCrepe's for the same models (`main_eval.py` of RAIVNLab/sugar-crepe), whose training
  data match Table 11's (WebImageText 400M, LAION-2B, LAION-5B, DataComp). CLIP and
  RoBERTa-ViT-B/32 run as in Table 2, whose numbers they repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.report.paper.tables.bivlc import ROWS2 as BIVLC_ROWS
from lexsem.report.paper.tables.openclip_models import SPECS, openclip_rows
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
_DRIVE_XVLM = "the authors' checkpoint from Google Drive (no lexsem backend runs XVLM)"
_TAG = "the paper names no pretrained tag: SugarCrepe's for this model"


def _table(
    number: str,
    table: str,
    description: str,
    included: str,
    rows: tuple[ModelRow, ...],
    values: Mapping[str, Sequence[float | None]],
) -> PaperTable:
    """The table `scpp_table{number}` (`table`: the paper's name for it); `values`, one number
    per column of `COLUMNS` (None where the paper prints none)."""
    return PaperTable(
        name=f"scpp_table{number}",
        paper=PAPER,
        table=table,
        description=description,
        included=included,
        rows=rows,
        cells=cells(COLUMNS, values),
    )


# each table's rows, then its values: per subset (Swap Object, Swap Attribute, Replace Object,
# Replace Attribute, Replace Relation), ITT and TOT

# Table 2
_ROWS2 = (
    ModelRow(name="CLIP", spec="clip:openai/clip-vit-base-patch32"),
    *openclip_rows("RoBERTa-ViT-B/32"),
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

_VALUES2 = {
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

# Table 3
_ROWS3 = (
    ModelRow(name="ViLT-ITR-COCO", spec="itm:dandelin/vilt-b32-finetuned-coco"),
    ModelRow(name="XVLM-16M-COCO", needs=_DRIVE_XVLM),
    ModelRow(name="XVLM-16M-Flickr", needs=_DRIVE_XVLM),
)

_VALUES3 = {
    "ViLT-ITR-COCO": (50.88, None, 73.36, None, 89.89, None, 71.95, None, 61.24, None),
    "XVLM-16M-COCO": (39.91, 21.06, 49.93, 51.60, 91.65, 96.79, 74.24, 83.63, 63.09, 62.87),
    "XVLM-16M-Flickr": (45.61, 21.49, 50.53, 44.44, 91.71, 96.01, 74.24, 81.59, 64.01, 59.89),
}

# Table 4
_ROWS4 = (
    _ROWS2[0],  # CLIP
    ModelRow(name="NegCLIP", needs=BIVLC_ROWS[2].needs),
    ModelRow(name="CLIP-SVLC", needs=_DRIVE),
    ModelRow(name="BLIP-SGVL", needs=_DRIVE),
    ModelRow(name="CyCLIP", needs=_DRIVE),
)

_VALUES4 = {
    "CLIP": (45.18, 19.74, 45.21, 33.03, 86.80, 83.72, 65.61, 59.14, 56.26, 38.62),
    "NegCLIP": (55.25, 34.65, 57.99, 56.47, 89.53, 94.55, 69.41, 76.27, 52.27, 51.57),
    "CLIP-SVLC": (42.98, 18.86, 48.40, 34.56, 80.93, 91.56, 56.98, 66.88, 47.30, 51.28),
    "BLIP-SGVL": (13.16, None, 38.81, None, 53.75, None, 34.39, None, 30.65, None),
    "CyCLIP": (37.72, 13.60, 34.40, 18.72, 70.28, 78.29, 49.87, 49.12, 40.41, 29.87),
}

# Tables 5 and 12
_ROWS12 = (
    *openclip_rows("RN50", "RN101"),
    _ROWS2[0],  # CLIP
    *openclip_rows("RN50×4", "RN50×16"),
    ModelRow(name="CLIP-ViT-L/14", spec=SPECS["vit-l-14"]),
    *openclip_rows("RN50×64"),
    _ROWS2[1],  # RoBERTa-ViT-B/32
    *openclip_rows(
        "ViT-H/14",
        "ViT-g/14",
        "ViT-bigG/14",
        "xlm-RoBERTa-base-ViT-B/32",
        "xlm-RoBERTa-large-ViT-H/14",
        "large:ViT-B/16",
        "xlarge:ViT-L/14",
        note=_TAG,
    ),
)

_VALUES12 = {
    "RN50": (46.05, 17.98, 49.01, 31.35, 87.41, 82.45, 67.39, 57.36, 56.12, 39.04),
    "RN101": (42.10, 18.86, 48.10, 29.68, 88.20, 83.17, 67.89, 55.21, 53.20, 39.76),
    "CLIP": (45.18, 19.74, 45.21, 33.03, 86.80, 83.72, 65.61, 59.14, 56.26, 38.62),
    "RN50×4": (46.93, 21.49, 46.42, 30.59, 87.77, 80.87, 67.51, 53.93, 53.91, 38.55),
    "RN50×16": (39.04, 17.55, 46.42, 30.29, 89.10, 76.57, 65.74, 49.87, 53.41, 38.19),
    "CLIP-ViT-L/14": (43.86, 17.11, 45.36, 28.92, 90.68, 80.69, 67.39, 55.96, 54.05, 39.26),
    "RN50×64": (44.74, 16.67, 45.36, 31.51, 90.79, 73.31, 64.47, 48.61, 54.27, 38.12),
    "RoBERTa-ViT-B/32": (44.30, 29.39, 56.32, 52.66, 89.04, 94.55, 74.49, 80.46, 59.39, 57.75),
    "ViT-H/14": (43.42, 27.63, 54.19, 50.69, 93.71, 90.43, 71.06, 73.98, 56.62, 51.92),
    "ViT-g/14": (44.30, 26.32, 52.06, 43.99, 93.10, 91.83, 71.19, 73.73, 57.54, 52.56),
    "ViT-bigG/14": (45.61, 29.82, 57.38, 52.05, 94.13, 90.44, 76.40, 72.84, 59.45, 53.49),
    "xlm-RoBERTa-base-ViT-B/32": (
        42.55, 30.26, 55.25, 55.56, 89.41, 95.34, 72.97, 80.96, 55.48, 57.82
    ),
    "xlm-RoBERTa-large-ViT-H/14": (
        42.10, 29.83, 54.19, 52.36, 93.94, 94.25, 75.38, 79.19, 58.75, 60.69
    ),
    "large:ViT-B/16": (35.96, 17.98, 39.58, 30.44, 87.83, 90.50, 67.89, 70.81, 50.36, 39.04),
    "xlarge:ViT-L/14": (42.55, 26.75, 46.58, 39.12, 91.59, 91.89, 72.59, 71.45, 55.83, 49.79),
}  # fmt: skip

TABLE2 = _table(
    "2",
    "Table 2",
    "vision-language models, ITT and TOT accuracy (%) per subset",
    "all 13 model rows (not Human); 7 have a lexsem spec",
    _ROWS2,
    _VALUES2,
)
TABLE3 = _table(
    "3",
    "Table 3",
    "VLMs fine-tuned for image-text retrieval, ITT and TOT accuracy (%) per subset",
    "the 3 fine-tuned rows (ViLT and XVLM-16M are Table 2's); 1 has a lexsem spec",
    _ROWS3,
    _VALUES3,
)
TABLE4 = _table(
    "4",
    "Table 4",
    "compositionality methods against CLIP, ITT and TOT accuracy (%) per subset",
    "all 5 model rows (not Human); 1 has a lexsem spec",
    _ROWS4,
    _VALUES4,
)
TABLE12 = _table(
    "12",
    "Tables 5 and 12",
    "variants of CLIP, ITT and TOT accuracy (%) per subset",
    "all 15 model rows of Table 12 (Table 5's 7 among them), each with a spec",
    _ROWS12,
    _VALUES12,
)

"""BiVLC's published tables ("BiVLC: Extending Vision-Language Compositionality Evaluation with
Text-to-Image Retrieval"), as data: each table's rows and its numbers as the paper prints them
(one value per column), made into a `PaperTable` by `_table`. The columns in a lexsem run
record: SugarCrepe accuracy pooled over all its items (BiVLC's `evaluation_SugarCrepe.py`
concatenates the subsets) and BiVLC's metrics on all 2,933 items (§4 and §5.3), or on the items
of one category of negative caption.

- `TABLE2` (§4, Table 2): existing models on SugarCrepe and BiVLC; the four contrastive models
  and both VQAScore models. Left out: Human and Random (not models) and Open CapPa (no lexsem
  backend; its row is not legible in the text we have). `bivlc_table2.LAYOUT` lays out
  generative runs in the same columns.
- `TABLE3` (§5.3, Table 3): contrastive models of one size, with the finer retrieval metrics;
  all six model rows (Random is chance, not a model).
- `TABLE4` (§5.3, Table 4): multimodal models per category of negative caption, REPLACE, SWAP
  and ADD. A category's I2T, T2I and Group pool its items (lexsem's `_replace`, `_swap`, `_add`
  rows of a BiVLC run). All nine models (Random is chance); Open CapPa has no lexsem backend.
- `TABLE5` (§5.4, Table 5; App. E): the synthetic-vs-natural detectors as retrieval systems.
  Stored: I2T, T2I and Group, the cells a lexsem run records; the text and image detection
  accuracies are the detectors' own (`lexsem train-detector -b`), not a metric of a BiVLC run.
  Each detector is a folder that `lexsem train-detector` writes on TROHN-IMG's training images
  and captions, run as `artifact:DIR`; no folder ships with lexsem, so each row says what it
  needs. `artifact:` scores pairs without the reference's condition that the query's own
  detection be correct (docs/fidelity.md, "Artifact baselines").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells

PAPER = "BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval"
SUGARCREPE = Column(
    benchmark="sugarcrepe", task="pair", metric="acc", subset="_micro", header="SugarCrepe"
)
MAIN = tuple(
    Column(benchmark="bivlc", task="bivlc", metric=m, subset="_micro", header=h)
    for m, h in (("i2t", "I2T"), ("t2i", "T2I"), ("group", "Group"))
)
FINER = tuple(
    Column(benchmark="bivlc", task="bivlc", metric=m, subset="_micro", header=h)
    for m, h in (
        ("ipos2t", "Ipos2T"),
        ("ineg2t", "Ineg2T"),
        ("tpos2i", "Tpos2I"),
        ("tneg2i", "Tneg2I"),
    )
)


CATEGORIES = (("replace", "REPLACE"), ("swap", "SWAP"), ("add", "ADD"))
CATEGORY_COLUMNS = tuple(
    Column(benchmark="bivlc", task="bivlc", metric=m, subset=f"_{c}", header=f"{h} {mh}")
    for c, h in CATEGORIES
    for m, mh in (("i2t", "I2T"), ("t2i", "T2I"), ("group", "Group"))
)


def checkpoint(repo: str) -> str:
    """What a BiVLC fine-tuned CLIP needs: its `.pt` file from the Hub, run as a local
    open_clip checkpoint."""
    return f"the .pt file of {repo} (Hugging Face Hub), run as openclip:ViT-B-32-quickgelu@PATH"


def _table(
    number: str,
    description: str,
    included: str,
    rows: tuple[ModelRow, ...],
    columns: Sequence[Column],
    values: Mapping[str, Sequence[float | None]],
) -> PaperTable:
    """BiVLC's Table `number`; `values`, one number per column (None where the paper prints
    none)."""
    return PaperTable(
        name=f"bivlc_table{number}",
        paper=PAPER,
        table=f"Table {number}",
        description=description,
        included=included,
        rows=rows,
        cells=cells(columns, values),
    )


def _detector(base: str) -> str:
    return (
        "a detector folder DIR from `lexsem train-detector` on TROHN-IMG's training manifest "
        f"with {base}, run as artifact:DIR"
    )


# Table 2: SugarCrepe, BiVLC I2T, T2I, Group
ROWS2 = (
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

_VALUES2 = {
    "CLIP": (76.56, 75.83, 52.40, 49.06),
    "CLIP_COCO": (84.66, 82.75, 63.89, 60.96),
    "NEGCLIP": (85.64, 80.74, 61.95, 58.75),
    "GNM": (81.83, 81.32, 60.86, 57.96),
    "VQAScore-XL": (90.85, 81.96, 76.61, 70.20),
    "VQAScore-XXL": (93.72, 86.16, 81.93, 76.47),
}

# Table 3: SugarCrepe; BiVLC I2T, T2I, Group; Ipos2T, Ineg2T, Tpos2I, Tneg2I
_ROWS3 = (
    *ROWS2[:4],
    ModelRow(name="CLIP_TROHN-TEXT", needs=checkpoint("imirandam/CLIP_TROHN-Text")),
    ModelRow(name="CLIP_TROHN-IMG", needs=checkpoint("imirandam/CLIP_TROHN-Img")),
)

_VALUES3 = {
    "CLIP": (76.56, 75.83, 52.40, 49.06, 84.32, 89.50, 69.21, 82.82),
    "CLIP_COCO": (84.66, 82.75, 63.89, 60.96, 89.06, 91.75, 72.79, 90.86),
    "NEGCLIP": (85.64, 80.74, 61.95, 58.75, 89.53, 89.53, 70.10, 91.34),
    "GNM": (81.83, 81.32, 60.86, 57.96, 88.00, 91.24, 80.33, 80.33),
    "CLIP_TROHN-TEXT": (93.40, 78.18, 62.19, 57.48, 93.25, 83.87, 71.05, 90.59),
    "CLIP_TROHN-IMG": (89.40, 88.54, 71.84, 69.25, 92.12, 95.33, 81.45, 90.15),
}

# Table 4: REPLACE, SWAP, ADD: I2T, T2I, Group each
_ROWS4 = (
    *_ROWS3,
    ModelRow(name="Open CapPa", needs="the open CapPa captioner (no lexsem backend runs it)"),
    *ROWS2[4:],
)

_VALUES4 = {
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

# Table 5: I2T, T2I, Group (the text and image detection accuracies are not stored)
_ROWS5 = (
    ModelRow(name="CLIP_Det", needs=_detector("--model openclip:ViT-B-32-quickgelu/openai")),
    ModelRow(
        name="CLIP_TROHN-IMG/Det",
        needs=_detector(
            "--model openclip:ViT-B-32-quickgelu@PATH, PATH the .pt file of "
            "imirandam/CLIP_TROHN-Img (Hugging Face Hub)"
        ),
    ),
)

_VALUES5 = {
    "CLIP_Det": (66.69, 19.64, 19.64),
    "CLIP_TROHN-IMG/Det": (75.04, 26.42, 26.42),
}

TABLE2 = _table(
    "2",
    "SugarCrepe accuracy and BiVLC I2T, T2I, Group (%), contrastive and generative",
    "6 of 7 model rows (not Open CapPa); Human and Random are not models",
    ROWS2,
    (SUGARCREPE, *MAIN),
    _VALUES2,
)
TABLE3 = _table(
    "3",
    "SugarCrepe; BiVLC I2T, T2I, Group and Ipos2T, Ineg2T, Tpos2I, Tneg2I (%)",
    "all 6 model rows (Random is chance)",
    _ROWS3,
    (SUGARCREPE, *MAIN, *FINER),
    _VALUES3,
)
TABLE4 = _table(
    "4",
    "BiVLC I2T, T2I, Group (%) per category: REPLACE, SWAP, ADD (items pooled)",
    "all 9 model rows (Random is chance); 3 have a lexsem spec",
    _ROWS4,
    CATEGORY_COLUMNS,
    _VALUES4,
)
TABLE5 = _table(
    "5",
    "synthetic-vs-natural detectors as retrieval systems: BiVLC I2T, T2I, Group (%)",
    "both detector rows (Random is chance); the detection accuracies are not stored",
    _ROWS5,
    MAIN,
    _VALUES5,
)

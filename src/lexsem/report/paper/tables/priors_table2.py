"""The linguistic-priors paper's Table 2: vision-language models and blind language models on
ARO ("The Role of Linguistic Priors in Measuring Compositional Generalization of Vision-Language
Models", §4, Table 2). Language models pick the caption of lowest perplexity (§4.1, Eq. 1):
lexsem's blind task. VG-Attribution and VG-Relation are read from ARO's paper preset (the macro
over labels, `_vg_*_macro`), as the paper evaluates "using the same way as" ARO.

Rows: all 11. Tables 3 and 4 (hard test accuracy, linguistic gap) are analyses of runs
(`lexsem report --html`), not run-record cells, and are not stored here.
"""

from __future__ import annotations

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells

PAPER = (
    "The Role of Linguistic Priors in Measuring Compositional Generalization of "
    "Vision-Language Models"
)
_SUBSETS = (
    ("aro_order", "coco_order", "coco_order", "CC_O"),
    ("aro_order", "flickr30k_order", "flickr30k_order", "FL_O"),
    ("aro_vg", "vg_attribution", "_vg_attribution_macro", "VG_A"),
    ("aro_vg", "vg_relation", "_vg_relation_macro", "VG_R"),
)


def _columns(blind: bool) -> tuple[Column, ...]:
    return tuple(
        Column(
            benchmark=bench,
            task="blind" if blind else bench,
            metric="blind" if blind else "acc",
            subset=row,
            header=header,
        )
        for bench, _, row, header in _SUBSETS
    )


VLM_ROWS = (
    ModelRow(name="CLIP", spec="clip:openai/clip-vit-base-patch32"),
    ModelRow(name="CLIP_FT", needs="ARO's CLIP fine-tuned on COCO (checkpoint file, no spec)"),
    ModelRow(name="BLIP ITC", spec="clip:Salesforce/blip-itm-base-coco"),
    ModelRow(name="BLIP ITM", spec="itm:Salesforce/blip-itm-base-coco"),
    ModelRow(name="FLAVA CONTR", spec="clip:facebook/flava-full"),
    ModelRow(name="FLAVA ITM", spec="itm:facebook/flava-full"),
)
LM_ROWS = (
    ModelRow(name="GPT-2", spec="lm:openai-community/gpt2"),
    ModelRow(name="GPT-2 XL", spec="lm:openai-community/gpt2-xl"),
    ModelRow(name="OPT 1.3B", spec="lm:facebook/opt-1.3b"),
    ModelRow(name="GPT-J 6B", spec="lm:EleutherAI/gpt-j-6b"),
    ModelRow(
        name="AVG_LM",
        needs="the mean of GPT-2 XL, OPT 1.3B and GPT-J 6B: lexsem.models.average.AverageScorer "
        "from Python (no spec string)",
    ),
)

# CC_O, FL_O, VG_A, VG_R
VLM = {
    "CLIP": (47.73, 59.12, 61.35, 59.79),
    "CLIP_FT": (31.18, 40.96, 62.41, 60.01),
    "BLIP ITC": (13.21, 17.60, 80.00, 41.59),
    "BLIP ITM": (20.83, 25.02, 88.56, 53.35),
    "FLAVA CONTR": (7.03, 18.66, 60.37, 29.13),
    "FLAVA ITM": (4.81, 13.20, 68.83, 23.71),
}
LM = {
    "GPT-2": (95.28, 96.26, 76.57, 85.07),
    "GPT-2 XL": (95.79, 96.68, 80.64, 85.07),
    "OPT 1.3B": (98.00, 98.32, 81.60, 84.30),
    "GPT-J 6B": (94.71, 95.82, 82.66, 85.36),
    "AVG_LM": (97.33, 97.70, 84.48, 85.67),
}

TABLE = PaperTable(
    name="priors_table2",
    paper=PAPER,
    table="Table 2",
    description="ARO accuracy (%) of VLM heads and of blind language models (lowest perplexity)",
    included="all 11 rows",
    rows=VLM_ROWS + LM_ROWS,
    cells=cells(_columns(False), VLM) + cells(_columns(True), LM),
)

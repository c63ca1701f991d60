"""BiVLC Table 5: the synthetic-vs-natural detectors as retrieval systems on BiVLC ("BiVLC:
Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval", §5.4,
Table 5; App. E). Stored: I2T, T2I and Group, the cells a lexsem run records; the text and
image detection accuracies are the detectors' own (`lexsem train-detector -b`), not a metric
of a BiVLC run.

Rows: both detectors (Random is chance). Each is a detector folder that `lexsem train-detector`
writes on TROHN-IMG's training images and captions, run as `artifact:DIR`; no folder ships with
lexsem, so each row says what it needs. `artifact:` scores pairs without the reference's
condition that the query's own detection be correct (docs/fidelity.md, "Artifact baselines").
"""

from __future__ import annotations

from lexsem.report.paper.facts import ModelRow, PaperTable, cells
from lexsem.report.paper.tables.bivlc import MAIN, PAPER


def _detector(base: str) -> str:
    return (
        "a detector folder DIR from `lexsem train-detector` on TROHN-IMG's training manifest "
        f"with {base}, run as artifact:DIR"
    )


ROWS = (
    ModelRow(name="CLIP_Det", needs=_detector("--model openclip:ViT-B-32-quickgelu/openai")),
    ModelRow(
        name="CLIP_TROHN-IMG/Det",
        needs=_detector(
            "--model openclip:ViT-B-32-quickgelu@PATH, PATH the .pt file of "
            "imirandam/CLIP_TROHN-Img (Hugging Face Hub)"
        ),
    ),
)

# I2T, T2I, Group (the text and image detection accuracies are not stored: module doc)
VALUES = {
    "CLIP_Det": (66.69, 19.64, 19.64),
    "CLIP_TROHN-IMG/Det": (75.04, 26.42, 26.42),
}

TABLE = PaperTable(
    name="bivlc_table5",
    paper=PAPER,
    table="Table 5",
    description="synthetic-vs-natural detectors as retrieval systems: BiVLC I2T, T2I, Group (%)",
    included="both detector rows (Random is chance); the detection accuracies are not stored",
    rows=ROWS,
    cells=cells(MAIN, VALUES),
)

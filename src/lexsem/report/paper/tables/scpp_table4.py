"""SugarCrepe++ Table 4: methods that improve compositionality, ITT and TOT, CLIP the baseline
("SUGARCREPE++ Dataset: Vision-Language Model Sensitivity to Semantic and Lexical Alterations",
§3.1, Table 4; the checkpoints are listed in App. K.3).

Rows: all five models (the Human row is not a model). CLIP runs as in Table 2; NegCLIP is an
open_clip ViT-B/32 checkpoint file; CLIP-SVLC, BLIP-SGVL and CyCLIP are the authors' Google
Drive checkpoints for their own code. BLIP-SGVL has no TOT.
"""

from __future__ import annotations

from lexsem.report.paper.facts import ModelRow, PaperTable, cells
from lexsem.report.paper.tables.bivlc_table2 import ROWS as BIVLC_ROWS
from lexsem.report.paper.tables.scpp import PAPER
from lexsem.report.paper.tables.scpp_table2 import COLUMNS
from lexsem.report.paper.tables.scpp_table2 import ROWS as TABLE2_ROWS

_DRIVE = "the authors' checkpoint from Google Drive (no lexsem backend runs it)"

ROWS = (
    TABLE2_ROWS[0],  # CLIP
    ModelRow(name="NegCLIP", needs=BIVLC_ROWS[2].needs),
    ModelRow(name="CLIP-SVLC", needs=_DRIVE),
    ModelRow(name="BLIP-SGVL", needs=_DRIVE),
    ModelRow(name="CyCLIP", needs=_DRIVE),
)

# per subset (Swap Object, Swap Attribute, Replace Object, Replace Attribute, Replace
# Relation): ITT, TOT
VALUES = {
    "CLIP": (45.18, 19.74, 45.21, 33.03, 86.80, 83.72, 65.61, 59.14, 56.26, 38.62),
    "NegCLIP": (55.25, 34.65, 57.99, 56.47, 89.53, 94.55, 69.41, 76.27, 52.27, 51.57),
    "CLIP-SVLC": (42.98, 18.86, 48.40, 34.56, 80.93, 91.56, 56.98, 66.88, 47.30, 51.28),
    "BLIP-SGVL": (13.16, None, 38.81, None, 53.75, None, 34.39, None, 30.65, None),
    "CyCLIP": (37.72, 13.60, 34.40, 18.72, 70.28, 78.29, 49.87, 49.12, 40.41, 29.87),
}

TABLE = PaperTable(
    name="scpp_table4",
    paper=PAPER,
    table="Table 4",
    description="compositionality methods against CLIP, ITT and TOT accuracy (%) per subset",
    included="all 5 model rows (not Human); 1 has a lexsem spec",
    rows=ROWS,
    cells=cells(COLUMNS, VALUES),
)

"""SugarCrepe++ Table 16: unimodal language models on TOT ("SUGARCREPE++ Dataset:
Vision-Language Model Sensitivity to Semantic and Lexical Alterations", App. F, Table 16).

Rows: every model of the table except the two Instructor-large rows (INSTRUCTOR pools without
its instruction tokens, which a lexsem spec cannot express) and the two AnglE rows (their
pooling and prompt are not stated in the paper). The Average column is derived and not stored.
"""

from __future__ import annotations

from lexsem.report.paper.facts import Column, PaperTable, cells
from lexsem.report.paper.tables.scpp import PAPER, SUBSETS
from lexsem.report.paper.tables.text_models import text_rows

COLUMNS = tuple(
    Column(benchmark="sugarcrepe_pp", task="tot", metric="tot", subset=s, header=h)
    for s, h in SUBSETS.items()
)

# Swap Object, Swap Attribute, Replace Object, Replace Attribute, Replace Relation
VALUES = {
    "All-MiniLM-L6-v2": (14.29, 22.52, 93.95, 64.97, 63.94),
    "BGE-small-en-v1.5": (15.51, 24.02, 94.19, 75.00, 75.53),
    "All-MiniLM-L12-v2": (18.78, 25.38, 95.22, 73.86, 70.41),
    "GTE-small": (13.88, 22.07, 94.98, 71.95, 69.06),
    "BGE-base-en-v1.5": (17.14, 25.23, 93.83, 78.55, 76.10),
    "Sentence-T5-base": (28.98, 31.98, 92.37, 75.00, 75.32),
    "GTE-base": (17.14, 22.82, 94.31, 75.00, 71.98),
    "UAE-Large-v1": (40.41, 41.44, 96.85, 76.14, 75.82),
    "GTE-large": (26.53, 27.93, 96.31, 76.78, 72.83),
    "All-RoBERTa-large-v1": (42.04, 45.20, 94.61, 74.75, 74.96),
    "Stsb-RoBERTa-large": (25.31, 31.98, 94.19, 89.21, 75.18),
    "Sentence-T5-xl": (47.35, 49.25, 90.98, 75.38, 75.32),
    "E5-Mistral-7b-instruct": (33.47, 37.84, 96.67, 87.06, 80.51),
}

TABLE = PaperTable(
    name="scpp_table16",
    paper=PAPER,
    table="Table 16",
    description="unimodal language models, TOT accuracy (%) per subset",
    included="13 of 17 rows: all but Instructor-large (both rows) and the two AnglE models",
    rows=text_rows(VALUES),
    cells=cells(COLUMNS, VALUES),
)

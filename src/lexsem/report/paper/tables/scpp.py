"""The SugarCrepe++ paper ("SUGARCREPE++ Dataset: Vision-Language Model Sensitivity to Semantic
and Lexical Alterations") and its five subsets, under the names and in the order of its tables
(Tables 2, 8, 14 and 16; Tables 17 and 18 shorten the names)."""

from __future__ import annotations

PAPER = (
    "SUGARCREPE++ Dataset: Vision-Language Model Sensitivity to Semantic and Lexical Alterations"
)
SUBSETS = {
    "swap_obj": "Swap Object",
    "swap_att": "Swap Attribute",
    "replace_obj": "Replace Object",
    "replace_att": "Replace Attribute",
    "replace_rel": "Replace Relation",
}

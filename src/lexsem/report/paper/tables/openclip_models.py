"""The open_clip models of SugarCrepe's table, SugarCrepe++ Tables 5 and 12 and VISLA Tables 8
and 9, each with the lexsem spec that runs it: its open_clip architecture and pretrained tag as
SugarCrepe's `main_eval.py` (RAIVNLab/sugar-crepe) names them, declared once for the three
papers' tables; a row keeps the name its paper prints."""

from __future__ import annotations

from lexsem.report.paper.facts import ModelRow

# the model's name as SugarCrepe's table prints it, and its open_clip tag, in the table's order
TAGS = (
    ("RN50", "RN50-quickgelu/openai"),
    ("RN101", "RN101-quickgelu/openai"),
    ("ViT-B-32", "ViT-B-32-quickgelu/openai"),
    ("RN50x4", "RN50x4-quickgelu/openai"),
    ("RN50x16", "RN50x16-quickgelu/openai"),
    ("ViT-L-14", "ViT-L-14-quickgelu/openai"),
    ("RN50x64", "RN50x64-quickgelu/openai"),
    ("roberta-ViT-B-32", "roberta-ViT-B-32/laion2b_s12b_b32k"),
    ("ViT-H-14", "ViT-H-14/laion2b_s32b_b79k"),
    ("ViT-g-14", "ViT-g-14/laion2b_s12b_b42k"),
    ("ViT-bigG-14", "ViT-bigG-14/laion2b_s39b_b160k"),
    ("xlm-roberta-base-ViT-B-32", "xlm-roberta-base-ViT-B-32/laion5b_s13b_b90k"),
    ("xlm-roberta-large-ViT-H-14", "xlm-roberta-large-ViT-H-14/frozen_laion5b_s13b_b90k"),
    ("small:ViT-B-32", "ViT-B-32/datacomp_s_s13m_b4k"),
    ("medium:ViT-B-32", "ViT-B-32/datacomp_m_s128m_b4k"),
    ("large:ViT-B-16", "ViT-B-16/datacomp_l_s1b_b8k"),
    ("xlarge:ViT-L-14", "ViT-L-14/datacomp_xl_s13b_b90k"),
)


def _key(name: str) -> str:
    """A model's name as any of the papers prints it, made SugarCrepe's: lower case, `×` as `x`
    and `/` as `-` (SugarCrepe++'s `RN50×4`, `ViT-H/14`)."""
    return name.lower().replace("×", "x").replace("/", "-")


SPECS = {_key(name): f"openclip:{tag}" for name, tag in TAGS}


def openclip_rows(*names: str, note: str | None = None) -> tuple[ModelRow, ...]:
    """The rows of `names` (as a paper prints them), in that order, each with `note`."""
    return tuple(ModelRow(name=n, spec=SPECS[_key(n)], note=note) for n in names)

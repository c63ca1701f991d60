"""The model rows of VISLA's tables and the lexsem specs that run them ("VISLA Benchmark:
Evaluating Embedding Sensitivity to Semantic and Lexical Alterations", §4.2 and App. C.2-C.5):
the unimodal language models of Tables 2, 3 and 5, and the vision-language models of Tables 8
and 9. Shared by the generic and spatial tables (`visla_generic`, `visla_spatial`).

Left out: Instructor-large (both rows: INSTRUCTOR pools without its instruction tokens, which a
lexsem spec cannot express) and the two AnglE models (pooling and prompt not stated); of the
VLMs, BLIP-Caption-COCO, SegCLIP, XVLM-4M, the fine-tuned X-VLMs, ViLT, ALIP, CLIP-SVLC,
BLIP-SGVL and CyCLIP (no lexsem backend runs them). ALBEF, XVLM-16M and NegCLIP are kept as
examples of rows that say what they need.
"""

from __future__ import annotations

from lexsem.reproduce.facts import ModelRow

PAPER = "VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and Lexical Alterations"

ULM_ROWS = (
    ModelRow(name="All-MiniLM-L6-v2", spec="st:sentence-transformers/all-MiniLM-L6-v2"),
    ModelRow(name="BGE-small-en-v1.5", spec="hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true"),
    ModelRow(name="All-MiniLM-L12-v2", spec="st:sentence-transformers/all-MiniLM-L12-v2"),
    ModelRow(name="GTE-small", spec="hf:thenlper/gte-small?pooling=mean&normalize=true"),
    ModelRow(name="BGE-base-en-v1.5", spec="hf:BAAI/bge-base-en-v1.5?pooling=cls&normalize=true"),
    ModelRow(name="Sentence-T5-base", spec="st:sentence-transformers/sentence-t5-base"),
    ModelRow(name="GTE-base", spec="hf:thenlper/gte-base?pooling=mean&normalize=true"),
    ModelRow(
        name="Clip-ViT-B-32-multilingual-v1",
        spec="st:sentence-transformers/clip-ViT-B-32-multilingual-v1",
    ),
    ModelRow(name="Clip-ViT-B-32", spec="st:sentence-transformers/clip-ViT-B-32"),
    ModelRow(name="UAE-Large-V1", spec="st:WhereIsAI/UAE-Large-V1"),
    ModelRow(name="GTE-large", spec="hf:thenlper/gte-large?pooling=mean&normalize=true"),
    ModelRow(name="All-RoBERTa-large-v1", spec="st:sentence-transformers/all-roberta-large-v1"),
    ModelRow(name="Stsb-RoBERTa-large", spec="st:sentence-transformers/stsb-roberta-large"),
    ModelRow(name="LaBSE", spec="st:sentence-transformers/LaBSE"),
    ModelRow(name="Sentence-T5-xl", spec="st:sentence-transformers/sentence-t5-xl"),
    ModelRow(name="E5-Mistral-7b-instruct", spec="e5-mistral"),
)

_DRIVE = "the authors' checkpoint (no lexsem backend runs it)"

VLM_ROWS = (
    ModelRow(name="RN50", spec="openclip:RN50-quickgelu/openai"),
    ModelRow(name="RN101", spec="openclip:RN101-quickgelu/openai"),
    ModelRow(name="CLIP-ViT-B-32", spec="clip:openai/clip-vit-base-patch32"),
    ModelRow(name="RN50x4", spec="openclip:RN50x4-quickgelu/openai"),
    ModelRow(name="RN50x16", spec="openclip:RN50x16-quickgelu/openai"),
    ModelRow(name="CLIP-ViT-L-14", spec="clip:openai/clip-vit-large-patch14"),
    ModelRow(name="RN50x64", spec="openclip:RN50x64-quickgelu/openai"),
    ModelRow(name="ALIGN", spec="clip:kakaobrain/align-base"),
    ModelRow(name="ALBEF", needs="its LAVIS checkpoint (no lexsem backend runs LAVIS models)"),
    ModelRow(name="FLAVA", spec="clip:facebook/flava-full"),
    ModelRow(name="BLIP-ITM-COCO", spec="itm:Salesforce/blip-itm-base-coco"),
    ModelRow(name="BLIP2", spec="clip:Salesforce/blip2-itm-vit-g"),
    ModelRow(name="XVLM-16M", needs=_DRIVE),
    ModelRow(name="ViLT-ITR-COCO", spec="itm:dandelin/vilt-b32-finetuned-coco"),
    ModelRow(name="AltCLIP", spec="clip:BAAI/AltCLIP"),
    ModelRow(name="RoBERTa-ViT-B-32", spec="openclip:roberta-ViT-B-32/laion2b_s12b_b32k"),
    ModelRow(name="ViT-H-14", spec="openclip:ViT-H-14/laion2b_s32b_b79k"),
    ModelRow(name="ViT-g-14", spec="openclip:ViT-g-14/laion2b_s12b_b42k"),
    ModelRow(name="ViT-bigG-14", spec="openclip:ViT-bigG-14/laion2b_s39b_b160k"),
    ModelRow(
        name="xlm-roberta-base-ViT-B-32",
        spec="openclip:xlm-roberta-base-ViT-B-32/laion5b_s13b_b90k",
    ),
    ModelRow(
        name="xlm-roberta-large-ViT-H-14",
        spec="openclip:xlm-roberta-large-ViT-H-14/frozen_laion5b_s13b_b90k",
    ),
    ModelRow(name="large:ViT-B-16", spec="openclip:ViT-B-16/datacomp_l_s1b_b8k"),
    ModelRow(name="xlarge:ViT-L-14", spec="openclip:ViT-L-14/datacomp_xl_s13b_b90k"),
    ModelRow(
        name="NegCLIP",
        needs="NegCLIP's checkpoint file (vinid/neg_clip), run as openclip:ViT-B-32-quickgelu/PATH",
    ),
)

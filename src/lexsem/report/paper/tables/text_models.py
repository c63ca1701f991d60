"""The sentence-embedding models of SugarCrepe++ Table 16 and VISLA Tables 2, 3 and 5, each with
the lexsem spec that runs it as the papers do (the pooling and normalization of its model card),
declared once for both papers' tables; a row keeps the name its paper prints."""

from __future__ import annotations

from collections.abc import Iterable

from lexsem.report.paper.facts import ModelRow

# the model's name (as either paper prints it, in lower case) -> its spec
SPECS = {
    "all-minilm-l6-v2": "st:sentence-transformers/all-MiniLM-L6-v2",
    "bge-small-en-v1.5": "hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true",
    "all-minilm-l12-v2": "st:sentence-transformers/all-MiniLM-L12-v2",
    "gte-small": "hf:thenlper/gte-small?pooling=mean&normalize=true",
    "bge-base-en-v1.5": "hf:BAAI/bge-base-en-v1.5?pooling=cls&normalize=true",
    "sentence-t5-base": "st:sentence-transformers/sentence-t5-base",
    "gte-base": "hf:thenlper/gte-base?pooling=mean&normalize=true",
    "clip-vit-b-32-multilingual-v1": "st:sentence-transformers/clip-ViT-B-32-multilingual-v1",
    "clip-vit-b-32": "st:sentence-transformers/clip-ViT-B-32",
    "uae-large-v1": "st:WhereIsAI/UAE-Large-V1",
    "gte-large": "hf:thenlper/gte-large?pooling=mean&normalize=true",
    "all-roberta-large-v1": "st:sentence-transformers/all-roberta-large-v1",
    "stsb-roberta-large": "st:sentence-transformers/stsb-roberta-large",
    "labse": "st:sentence-transformers/LaBSE",
    "sentence-t5-xl": "st:sentence-transformers/sentence-t5-xl",
    "e5-mistral-7b-instruct": "e5-mistral",
}


def text_rows(names: Iterable[str]) -> tuple[ModelRow, ...]:
    """The rows of `names` (as a paper prints them), in that order."""
    return tuple(ModelRow(name=n, spec=SPECS[n.lower()]) for n in names)

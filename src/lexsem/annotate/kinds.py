"""The task kinds of a human study: what one question shows, which answers it takes and which
one is right.

A *query* is one question put to an annotator: an optional base (a text or an image), options
(texts or images, shuffled per annotator) and fixed choices after them ("none", "both",
"accept"/"edit"/"reject"). Images are named by the sha256 of their bytes, which the study stores.

- ``tot`` / ``itt``: SugarCrepe++ human evaluation (§3, "Human evaluation is performed by 4
  graduate-level students ... asked to select the negative caption"): three captions (P1, P2, N),
  without (TOT) or with (ITT) the image; N is right.
- ``pair``: SugarCrepe's image-to-text question: the image, its caption and the hard negative.
- ``bivlc_i2t`` / ``bivlc_t2i``: BiVLC's human baseline (§4, App. H.1 "Human Baseline"): each
  instance gives two image-to-text queries (each image with both captions) and two text-to-image
  queries (each caption with both images), 2,000 queries for 500 instances. The query's base is
  part of its item id (`query_id`), so the two queries of one direction are told apart.
- ``best_of_k``: BiVLC §3 step 3: a caption and K generated images, choose one or "none".
- ``ambiguity``: BiVLC §3 step 4: the original caption and both images, choose one or "both".
- ``validate``: SugarCrepe++ §2.1 / VISLA §3.3 expert validation: a generated caption (second
  positive or negative) beside its original: accept, edit (the edit is recorded) or reject.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "FIXED_CHOICES",
    "KINDS",
    "Option",
    "Query",
    "query_id",
]

KINDS = ("tot", "itt", "pair", "bivlc_i2t", "bivlc_t2i", "best_of_k", "ambiguity", "validate")

# the choices each kind shows after its (shuffled) options, in this order
FIXED_CHOICES: dict[str, tuple[str, ...]] = {
    "tot": (),
    "itt": (),
    "pair": (),
    "bivlc_i2t": (),
    "bivlc_t2i": (),
    "best_of_k": ("none",),
    "ambiguity": ("both",),
    "validate": ("accept", "edit", "reject"),
}


@dataclass(frozen=True)
class Option:
    """One choice shown to an annotator: a text or an image (sha256 of the stored bytes)."""

    id: str
    text: str | None = None
    image: str | None = None


@dataclass(frozen=True)
class Query:
    """One question: `kind`, the item it comes from, its base, options and the right answer
    (None where the item has none: best-of-K of generated images, validation)."""

    kind: Literal[
        "tot", "itt", "pair", "bivlc_i2t", "bivlc_t2i", "best_of_k", "ambiguity", "validate"
    ]
    item_id: str
    subset: str
    benchmark: str
    options: tuple[Option, ...]
    correct: str | None
    base_text: str | None = None
    base_image: str | None = None
    context: tuple[tuple[str, str], ...] = field(default=())  # (label, text) shown above
    edit_text: str | None = None  # validate: the generated text, prefilled for editing

    @property
    def fixed(self) -> tuple[str, ...]:
        return FIXED_CHOICES[self.kind]

    def answer_ids(self) -> set[str]:
        """Every answer this query takes ("skip" always)."""
        return {o.id for o in self.options} | set(self.fixed) | {"skip"}


def query_id(item_id: str, base: str | None) -> str:
    """The item id an answer is recorded under: the benchmark item id, with the query's base
    after a `#` where one item gives several queries of one kind (BiVLC: `ID#image0`)."""
    return item_id if base is None else f"{item_id}#{base}"

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

Each kind is a `StudyKind` (its question, instructions, the items it asks about, the function
that makes its queries from an item, its fixed choices), an entry of the registry `KINDS` (a
`lexsem.registry.Registry`): the built-in kinds are lazy "module:attr" entries declared below
(`lexsem.annotate.queries`), so a new kind is one file that defines its `StudyKind` and one
line below (or one `register_kind` call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lexsem.registry import Registry

__all__ = [
    "CHOICE_KEYS",
    "CHOICE_LABELS",
    "FIXED_CHOICES",
    "KINDS",
    "KindField",
    "Option",
    "Query",
    "StudyKind",
    "query_id",
    "register_kind",
]


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

    kind: str  # a registered study kind (`KINDS`)
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
        return KINDS.get(self.kind).fixed

    def answer_ids(self) -> set[str]:
        """Every answer this query takes ("skip" always)."""
        return {o.id for o in self.options} | set(self.fixed) | {"skip"}


def query_id(item_id: str, base: str | None) -> str:
    """The item id an answer is recorded under: the benchmark item id, with the query's base
    after a `#` where one item gives several queries of one kind (BiVLC: `ID#image0`)."""
    return item_id if base is None else f"{item_id}#{base}"


ImageFn = Callable[[str], str]  # an image reference -> the sha256 of its bytes, stored
QueriesFn = Callable[[Any, str, ImageFn], list[Query]]  # (item, benchmark, image) -> queries


@dataclass(frozen=True)
class StudyKind:
    """A task kind: its name, the question over each query and the instructions annotators
    read (`lexsem.annotate.instructions`), the item classes it asks about
    (`lexsem.benchmarks.items`), `queries(item, benchmark, image)` making an item's queries,
    and the choices shown after the (shuffled) options, in order."""

    name: str
    question: str
    instructions: str
    items: tuple[type, ...]
    queries: QueriesFn
    fixed: tuple[str, ...] = ()


KINDS: Registry[StudyKind] = Registry(
    "study kind",
    StudyKind,
    {
        name: f"lexsem.annotate.queries:{name.upper()}"
        for name in (
            "tot",
            "itt",
            "pair",
            "bivlc_i2t",
            "bivlc_t2i",
            "best_of_k",
            "ambiguity",
            "validate",
        )
    },
)


def register_kind(kind: StudyKind, *, replace: bool = False) -> None:
    """Make `kind` usable in studies (`lexsem annotate create -k NAME`)."""
    KINDS.add(kind.name, kind, replace=replace)


class KindField(Mapping[str, Any]):
    """Kind name -> one field of each registered `StudyKind` (a read-only view of `KINDS`)."""

    def __init__(self, attr: str) -> None:
        self._attr = attr

    def __getitem__(self, name: str) -> Any:
        if name not in KINDS:
            raise KeyError(name)
        return getattr(KINDS.get(name), self._attr)

    def __iter__(self) -> Iterator[str]:
        return iter(KINDS)

    def __len__(self) -> int:
        return len(KINDS)


# the choices each kind shows after its (shuffled) options, in this order
FIXED_CHOICES: Mapping[str, tuple[str, ...]] = KindField("fixed")

#: The key that answers with each fixed choice (and skips) on a question page; an option's key
#: is its place (1, 2, ...).
CHOICE_KEYS: Mapping[str, str] = {
    "none": "n", "both": "b", "accept": "a", "edit": "e", "reject": "r", "skip": "s",
}  # fmt: skip
#: Each fixed choice's label on a question page.
CHOICE_LABELS: Mapping[str, str] = {
    "none": "None", "both": "Both", "accept": "Accept", "edit": "Save edit", "reject": "Reject",
    "skip": "Skip",
}  # fmt: skip

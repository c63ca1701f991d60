"""Benchmark items → the queries of each task kind: the built-in `StudyKind`s, entries of
`lexsem.annotate.kinds.KINDS`.

`image` stores an image reference's bytes in the study and returns their sha256, so a query
names only the study's own images.
"""

from __future__ import annotations

from lexsem.annotate.instructions import KIND_INSTRUCTIONS, KIND_QUESTIONS
from lexsem.annotate.kinds import KINDS, ImageFn, Option, Query, StudyKind, query_id
from lexsem.benchmarks.items import Item, PairItem, QuadItem, TripletItem
from lexsem.errors import LexsemError

__all__ = [
    "AMBIGUITY",
    "BEST_OF_K",
    "BIVLC_I2T",
    "BIVLC_T2I",
    "DEFAULT_KINDS",
    "ITT",
    "PAIR",
    "TOT",
    "VALIDATE",
    "item_queries",
]

# the kinds a study of each item kind gets when none is named
DEFAULT_KINDS = {
    TripletItem: ("tot", "itt"),
    PairItem: ("pair",),
    QuadItem: ("bivlc_i2t", "bivlc_t2i"),
}


def item_queries(item: Item, kind: str, benchmark: str, image: ImageFn) -> list[Query]:
    """The queries of `kind` for one benchmark item (a clear error for a kind the item's shape
    cannot give, or an image question about an item without an image)."""
    spec = KINDS.get(kind)
    if not isinstance(item, spec.items):
        wanted = " or ".join(t.__name__ for t in spec.items)
        raise LexsemError(
            f"{benchmark}: task kind {kind!r} needs {wanted} items, "
            f"item {item.id} is a {type(item).__name__}"
        )
    return spec.queries(item, benchmark, image)


def _need_image(item: TripletItem | PairItem, kind: str, benchmark: str) -> str:
    if not item.image:
        raise LexsemError(
            f"{benchmark}: task kind {kind!r} shows the image; item {item.id} has none"
        )
    return item.image


def _tot(item: TripletItem, benchmark: str, image: ImageFn) -> list[Query]:
    opts = (Option("p1", item.p1), Option("p2", item.p2), Option("n", item.n))
    return [Query("tot", item.id, item.subset, benchmark, opts, "n")]


def _itt(item: TripletItem, benchmark: str, image: ImageFn) -> list[Query]:
    sha = image(_need_image(item, "itt", benchmark))
    opts = (Option("p1", item.p1), Option("p2", item.p2), Option("n", item.n))
    return [Query("itt", item.id, item.subset, benchmark, opts, "n", base_image=sha)]


def _pair(item: TripletItem | PairItem, benchmark: str, image: ImageFn) -> list[Query]:
    sha = image(_need_image(item, "pair", benchmark))
    pos, neg = (item.pos, item.neg) if isinstance(item, PairItem) else (item.p1, item.n)
    opts = (Option("pos", pos), Option("neg", neg))
    return [Query("pair", item.id, item.subset, benchmark, opts, "pos", base_image=sha)]


def _i2t(item: QuadItem, benchmark: str, image: ImageFn) -> list[Query]:
    opts = (Option("caption0", item.caption0), Option("caption1", item.caption1))
    return [
        Query(
            "bivlc_i2t",
            query_id(item.id, f"image{k}"),
            item.subset,
            benchmark,
            opts,
            f"caption{k}",
            base_image=image(ref),
        )
        for k, ref in enumerate((item.image0, item.image1))
    ]


def _t2i(item: QuadItem, benchmark: str, image: ImageFn) -> list[Query]:
    opts = (Option("image0", image=image(item.image0)), Option("image1", image=image(item.image1)))
    return [
        Query(
            "bivlc_t2i",
            query_id(item.id, f"caption{k}"),
            item.subset,
            benchmark,
            opts,
            f"image{k}",
            base_text=text,
        )
        for k, text in enumerate((item.caption0, item.caption1))
    ]


def _best_of_k(item: QuadItem, benchmark: str, image: ImageFn) -> list[Query]:
    """A benchmark quad as best-of-K: the negative caption and both images (its own image is
    right); a build's generated images (`lexsem.annotate.build_rows`) have no right answer."""
    opts = (Option("image0", image=image(item.image0)), Option("image1", image=image(item.image1)))
    return [
        Query("best_of_k", item.id, item.subset, benchmark, opts, "image1", base_text=item.caption1)
    ]


def _ambiguity(item: QuadItem, benchmark: str, image: ImageFn) -> list[Query]:
    """BiVLC §3 step 4: the original caption and both images; the original image is right."""
    opts = (Option("image0", image=image(item.image0)), Option("image1", image=image(item.image1)))
    return [
        Query("ambiguity", item.id, item.subset, benchmark, opts, "image0", base_text=item.caption0)
    ]


def _validate(item: TripletItem, benchmark: str, image: ImageFn) -> list[Query]:
    """A benchmark triplet's second positive P2 checked against P1."""
    sha = image(item.image) if item.image else None
    return [
        Query(
            "validate",
            item.id,
            item.subset,
            benchmark,
            (),
            None,
            base_image=sha,
            context=(("P1 (original)", item.p1), ("P2 (second positive): to check", item.p2)),
            edit_text=item.p2,
        )
    ]


def _kind(
    name: str, items: tuple[type, ...], queries: object, fixed: tuple[str, ...] = ()
) -> StudyKind:
    return StudyKind(name, KIND_QUESTIONS[name], KIND_INSTRUCTIONS[name], items, queries, fixed)  # type: ignore[arg-type]


TOT = _kind("tot", (TripletItem,), _tot)
ITT = _kind("itt", (TripletItem,), _itt)
PAIR = _kind("pair", (PairItem, TripletItem), _pair)
BIVLC_I2T = _kind("bivlc_i2t", (QuadItem,), _i2t)
BIVLC_T2I = _kind("bivlc_t2i", (QuadItem,), _t2i)
BEST_OF_K = _kind("best_of_k", (QuadItem,), _best_of_k, ("none",))
AMBIGUITY = _kind("ambiguity", (QuadItem,), _ambiguity, ("both",))
VALIDATE = _kind("validate", (TripletItem,), _validate, ("accept", "edit", "reject"))

"""A study kind of the example plugin.

`plausible`: a triplet's caption and its negative, no image; the annotator picks the one that
describes a scene that could be photographed (the caption is right).
"""

from __future__ import annotations

from lexsem.annotate.kinds import ImageFn, Option, Query, StudyKind
from lexsem.benchmarks.items import TripletItem


def plausible_queries(item: TripletItem, benchmark: str, image: ImageFn) -> list[Query]:
    """One query per triplet: its caption and its negative as options, the caption right."""
    options = (Option("pos", item.p1), Option("neg", item.n))
    return [Query("plausible", item.id, item.subset, benchmark, options, "pos")]


KIND = StudyKind(
    name="plausible",
    question="Which sentence describes a scene that could be photographed?",
    instructions=(
        "Each question shows two sentences that use the same words. Select the one that "
        "describes a scene that could be photographed."
    ),
    items=(TripletItem,),
    queries=plausible_queries,
)

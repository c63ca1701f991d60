"""Typed benchmark items. Texts are kept exactly as in the source files."""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein


@dataclass(frozen=True, slots=True)
class TripletItem:
    """Two paraphrases (p1, p2) and a lexically close hard negative (n) of one image."""

    id: str
    subset: str
    image: str | None
    p1: str
    p2: str
    n: str

    def texts(self) -> tuple[str, str, str]:
        return (self.p1, self.p2, self.n)

    def p2_closer_to_n(self) -> bool:
        """True when p2 is strictly closer (character Levenshtein) to n than p1 is.

        VISLA's P1-N / P2-N analysis reorders each triplet so that P1 is the positive with the
        smaller edit distance to N; on a tie the file order is kept (SPEC §2).
        """
        return Levenshtein.distance(self.p2, self.n) < Levenshtein.distance(self.p1, self.n)


@dataclass(frozen=True, slots=True)
class PairItem:
    """One image with a true caption (pos) and a hard negative caption (neg)."""

    id: str
    subset: str
    image: str | None
    pos: str
    neg: str

    def texts(self) -> tuple[str, str]:
        return (self.pos, self.neg)


Item = TripletItem | PairItem

"""Word-level differences between captions (difflib's matching blocks over words): which words
of a caption are not in the caption it is compared with. A positive is compared with the
negative (P1 / P2 vs N, pos vs neg) and the negative with the first positive; two captions of
BiVLC or Winoground with each other."""

from __future__ import annotations

import difflib
import re

__all__ = ["marked", "roles_against"]

_WORD = re.compile(r"\S+")


def _norm(word: str) -> str:
    return word.lower().strip(".,;:!?\"'()")


def marked(text: str, other: str) -> list[tuple[str, bool]]:
    """`text` as (word, differs from `other`) pairs, in order."""
    a = _WORD.findall(text)
    b = _WORD.findall(other)
    same = [False] * len(a)
    sm = difflib.SequenceMatcher(None, [_norm(w) for w in a], [_norm(w) for w in b], False)
    for block in sm.get_matching_blocks():
        for k in range(block.a, block.a + block.size):
            same[k] = True
    return [(w, not s) for w, s in zip(a, same, strict=True)]


def roles_against(captions: dict[str, str]) -> dict[str, str]:
    """Each caption role -> the role it is compared with."""
    roles = list(captions)
    if "N" in captions:
        return {r: ("P1" if r == "N" else "N") for r in roles}
    if "neg" in captions:
        return {"pos": "neg", "neg": "pos"}
    if len(roles) >= 2:
        return {r: (roles[1] if r == roles[0] else roles[0]) for r in roles}
    return {}

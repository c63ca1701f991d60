"""Word-level differences between captions: which words of a caption are not in a longest
common subsequence of words with the caption it is compared with. A positive is compared with the
negative (P1 / P2 vs N, pos vs neg) and the negative with the first positive; two captions of
BiVLC or Winoground with each other."""

from __future__ import annotations

import difflib
import re

__all__ = ["marked", "roles_against"]

_WORD = re.compile(r"\S+")
_MAX_CELLS = 250_000  # words x words of an exact longest common subsequence


def _norm(word: str) -> str:
    return word.lower().strip(".,;:!?\"'()")


def _common(a: list[str], b: list[str]) -> list[bool]:
    """Which words of `a` are in a longest common subsequence with `b` (most words kept, so a
    swap marks the two words swapped); difflib's matching blocks for very long texts."""
    if len(a) * len(b) > _MAX_CELLS:
        same = [False] * len(a)
        for block in difflib.SequenceMatcher(None, a, b, False).get_matching_blocks():
            same[block.a : block.a + block.size] = [True] * block.size
        return same
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if a[i] == b[j]
                           else max(table[i + 1][j], table[i][j + 1]))  # fmt: skip
    same, i, j = [False] * n, 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            same[i], i, j = True, i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return same


def marked(text: str, other: str) -> list[tuple[str, bool]]:
    """`text` as (word, differs from `other`) pairs, in order."""
    a = _WORD.findall(text)
    same = _common([_norm(w) for w in a], [_norm(w) for w in _WORD.findall(other)])
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

"""Per-item hits for quads (BiVLC, Winoground) from the 2×2 score matrix of each item.

Each item has two images and two captions; (I0, C0) and (I1, C1) are the matching pairs. For
BiVLC, I0/C0 are the COCO image and caption and I1/C1 the generated negative image and negative
caption. The scores are

    s00 = s(I0, C0)   s01 = s(I0, C1)
    s10 = s(I1, C0)   s11 = s(I1, C1)

and (BiVLC paper, App. D, eqs. 1-3; Winoground, Thrush et al. 2022)

    Ipos2T = s00 > s01    (image I0 picks its caption C0 over C1)
    Ineg2T = s11 > s10    (image I1 picks C1 over C0)
    Tpos2I = s00 > s10    (caption C0 picks its image I0 over I1)
    Tneg2I = s11 > s01    (caption C1 picks I1 over I0)
    I2T    = Ipos2T ∧ Ineg2T
    T2I    = Tpos2I ∧ Tneg2I
    Group  = I2T ∧ T2I    (BiVLC's main metric)

Winoground names the same quantities text score (= I2T), image score (= T2I) and group score.
Comparisons are strict (`>`) unless the tie policy is `lenient`; an item counts as tied when any
comparison its metric depends on tied. Random chance: I2T 25, T2I 25, Group 16.67 (%).

BiVLC reports each metric overall and per type (REPLACE / SWAP / ADD, Table 4) and subtype. The
per-type numbers are pooled over the items of the type, not means of subtype accuracies: e.g.
CLIP's REPLACE group score 57.27 = 1202 / 2099 items, SWAP 13.65 = 49 / 359, ADD 39.58 = 188 / 475
(item counts from Table 1 / 4 retrieval examples per item). Split the hits by the item's `type`
label (`tasks.multi.split_hits`) and take each part's accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter

import numpy as np

from lexsem.stats.ties import Hits, TiePolicy, all_of, beats, check_policy
from lexsem.tasks.base import Column, Columns, Task

# Score columns of the quad tasks (the engine fills them; see `lexsem.tasks.quad.BIVLC`).
S_I0_C0 = "s_i0_c0"
S_I0_C1 = "s_i0_c1"
S_I1_C0 = "s_i1_c0"
S_I1_C1 = "s_i1_c1"
QUAD_COLUMNS: tuple[str, str, str, str] = (S_I0_C0, S_I0_C1, S_I1_C0, S_I1_C1)

# BiVLC metric names, the main metric (group) first.
GROUP = "group"
I2T = "i2t"
T2I = "t2i"
IPOS2T = "ipos2t"
INEG2T = "ineg2t"
TPOS2I = "tpos2i"
TNEG2I = "tneg2i"
BIVLC_METRICS: tuple[str, ...] = (GROUP, I2T, T2I, IPOS2T, INEG2T, TPOS2I, TNEG2I)

# The four directional comparisons, and the ones each metric needs (App. D, eqs. 1-3).
DIRECTIONS: tuple[str, str, str, str] = (IPOS2T, INEG2T, TPOS2I, TNEG2I)
NEEDS: dict[str, tuple[str, ...]] = {
    GROUP: DIRECTIONS,
    I2T: (IPOS2T, INEG2T),
    T2I: (TPOS2I, TNEG2I),
    **{d: (d,) for d in DIRECTIONS},
}

# Winoground metric names, the main metric (group) first, and what each one is in BiVLC terms.
WINOGROUND_METRICS: tuple[str, ...] = ("group", "text", "image")
WINOGROUND_NAMES: dict[str, str] = {"text": I2T, "image": T2I, "group": GROUP}

# Chance level (%) of each metric for a scorer with random, tie-free scores (Winoground §3).
CHANCE: dict[str, float] = {
    GROUP: 100.0 / 6.0,
    I2T: 25.0,
    T2I: 25.0,
    IPOS2T: 50.0,
    INEG2T: 50.0,
    TPOS2I: 50.0,
    TNEG2I: 50.0,
}


def _vectors(*arrays: np.ndarray) -> list[np.ndarray]:
    out = [np.asarray(a) for a in arrays]
    shape = out[0].shape
    if len(shape) != 1 or any(a.shape != shape for a in out):
        raise ValueError(
            "quad scores must be four 1-D arrays of the same length, got shapes "
            f"{[a.shape for a in out]}"
        )
    return out


def quad_hits(
    s00: np.ndarray,
    s01: np.ndarray,
    s10: np.ndarray,
    s11: np.ndarray,
    policy: TiePolicy = "strict",
) -> dict[str, Hits]:
    """All seven BiVLC metrics per item: group, i2t, t2i, ipos2t, ineg2t, tpos2i, tneg2i."""
    policy = check_policy(policy)
    s00, s01, s10, s11 = _vectors(s00, s01, s10, s11)
    return quad_metrics(
        {
            IPOS2T: beats(s00, s01, policy),
            INEG2T: beats(s11, s10, policy),
            TPOS2I: beats(s00, s10, policy),
            TNEG2I: beats(s11, s01, policy),
        }
    )


def quad_metrics(directions: Mapping[str, Hits]) -> dict[str, Hits]:
    """All seven BiVLC metrics from the hits of the four directional comparisons
    (`DIRECTIONS`: a model's score comparisons, or people's answers to the four queries,
    `lexsem.tasks.voted`): I2T, T2I and Group as `NEEDS` says (App. D, eqs. 1-3)."""
    out = {m: all_of(*(directions[d] for d in NEEDS[m])) for m in (GROUP, I2T, T2I)}
    return {**out, **{d: directions[d] for d in DIRECTIONS}}


def winoground_hits(
    s00: np.ndarray,
    s01: np.ndarray,
    s10: np.ndarray,
    s11: np.ndarray,
    policy: TiePolicy = "strict",
) -> dict[str, Hits]:
    """Winoground text / image / group scores per item (= BiVLC I2T / T2I / Group)."""
    h = quad_hits(s00, s01, s10, s11, policy)
    return {name: h[WINOGROUND_NAMES[name]] for name in WINOGROUND_METRICS}


def split_matrix(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n, 2, 2) matrix with scores[k, i, j] = s(I_i, C_j) -> (s00, s01, s10, s11)."""
    m = np.asarray(scores)
    if m.ndim != 3 or m.shape[1:] != (2, 2):
        raise ValueError(
            f"expected an (n, 2, 2) score matrix s[item, image, caption], got {m.shape}"
        )
    return m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]


def quad_hits_from_matrix(scores: np.ndarray, policy: TiePolicy = "strict") -> dict[str, Hits]:
    """`quad_hits` on an (n, 2, 2) matrix s[item, image, caption]."""
    return quad_hits(*split_matrix(scores), policy=policy)


def winoground_hits_from_matrix(
    scores: np.ndarray, policy: TiePolicy = "strict"
) -> dict[str, Hits]:
    """`winoground_hits` on an (n, 2, 2) matrix s[item, image, caption]."""
    return winoground_hits(*split_matrix(scores), policy=policy)


QUAD_SCORE_COLUMNS = (
    Column(S_I0_C0, "image_text", attrgetter("image0", "caption0")),
    Column(S_I0_C1, "image_text", attrgetter("image0", "caption1")),
    Column(S_I1_C0, "image_text", attrgetter("image1", "caption0")),
    Column(S_I1_C1, "image_text", attrgetter("image1", "caption1")),
)


def _quad(c: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return c[S_I0_C0], c[S_I0_C1], c[S_I1_C0], c[S_I1_C1]


BIVLC = Task(
    "bivlc",
    "BiVLC: I2T, T2I, Group and the four directional comparisons",
    "quad",
    "image",
    QUAD_SCORE_COLUMNS,
    BIVLC_METRICS,
    lambda c, p: quad_hits(*_quad(c), p),
    chance=CHANCE,
    labels={
        GROUP: "Group",
        I2T: "I2T",
        T2I: "T2I",
        IPOS2T: "Ipos2T",
        INEG2T: "Ineg2T",
        TPOS2I: "Tpos2I",
        TNEG2I: "Tneg2I",
    },
)
WINOGROUND = Task(
    "winoground",
    "Winoground: text, image and group scores",
    "quad",
    "image",
    QUAD_SCORE_COLUMNS,
    WINOGROUND_METRICS,
    lambda c, p: winoground_hits(*_quad(c), p),
    chance={name: CHANCE[WINOGROUND_NAMES[name]] for name in WINOGROUND_METRICS},
    labels={"group": "Group", "text": "Text", "image": "Image"},
)

"""The columns of VISLA's tables in a lexsem run record, for one benchmark (`visla_generic` or
`visla_spatial`): the text side (T2T and, after VISLA's Levenshtein reorder, P1-N / P2-N; Tables
2, 3 and 5) and the image side (P1-N / P2-N with the image as query, I2T; Tables 8 and 9)."""

from __future__ import annotations

from lexsem.reproduce.facts import Column


def text_columns(benchmark: str, subset: str) -> tuple[Column, ...]:
    """T2T, P1-N, P2-N of a text encoder (VISLA Tables 2 and 3)."""
    return tuple(
        Column(benchmark=benchmark, task="t2t", metric=m, subset=subset, header=h)
        for m, h in (("t2t", "T2T"), ("p1n", "P1-N"), ("p2n", "P2-N"))
    )


def vlm_columns(benchmark: str, subset: str) -> tuple[Column, ...]:
    """P1-N, P2-N, I2T (image query) and T2T (text towers) of a VLM (VISLA Tables 8 and 9)."""
    image = tuple(
        Column(benchmark=benchmark, task="i2t", metric=m, subset=subset, header=h)
        for m, h in (("i2t_p1n", "P1-N (image)"), ("i2t_p2n", "P2-N (image)"), ("i2t", "I2T"))
    )
    return (*image, text_columns(benchmark, subset)[0])

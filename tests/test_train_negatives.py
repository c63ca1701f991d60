"""Hard negative captions in training batches (`lexsem.train.batches`): keyed by caption — a
row's negative is one of its own caption's, NegCLIP's hard image brings a negative of the
hard image's own caption (`negative_image_caption`) — and drawn anew each epoch from a
generator of (seed, epoch) alone, as NegCLIP's loader draws ``random.choice`` of the row's
negatives every time it reads the row (its src/training/data.py, ``CsvDataset``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lexsem.errors import DataError
from lexsem.train.manifest import Example

pytestmark = pytest.mark.torch

NEGS = {
    ("A", "a dog on grass"): ("grass on a dog", "a grass on dog", "dog a on grass"),
    ("A", "a brown dog lies"): ("a dog lies brown", "lies a brown dog"),
    ("B", "a cat under a table"): ("a table under a cat", "a cat table under a", "under cat"),
    ("C", "a red car"): ("a car red", "red a car"),
}
HARD = {  # each row's hard image and the caption of that image it brings
    ("A", "a dog on grass"): ("B", "a cat under a table"),
    ("A", "a brown dog lies"): ("C", "a red car"),
    ("B", "a cat under a table"): ("A", "a dog on grass"),
    ("C", "a red car"): ("A", "a brown dog lies"),
}


def rows() -> list[Example]:
    return [
        Example(image=i, caption=c, negatives=n, negative_image=HARD[(i, c)][0],
                negative_image_caption=HARD[(i, c)][1])
        for (i, c), n in NEGS.items()
    ]  # fmt: skip


def examples() -> Any:
    import torch

    from lexsem.train.batches import Examples

    class Plain(Examples):
        def _pixels(self, ref: str) -> Any:
            return torch.zeros(3, 2, 2)

    return Plain(rows(), None, lambda x: x, 0)


def one_epoch(data: Any, seed: int, epoch: int, draw: str, skip: int = 0, size: int = 4) -> list:
    from lexsem.train.batches import epoch_batches

    out = []
    for b in epoch_batches(data, size, seed, epoch, skip=skip, draw=draw):  # type: ignore[arg-type]
        out += list(zip(b.captions, b.negatives, b.neg_captions, b.hard_negatives, strict=True))
    return out


def by_caption(batch: list) -> dict[str, tuple[str, str]]:
    return {cap: (neg, hard) for cap, neg, _, hard in batch}


def test_a_negative_is_of_its_own_caption_and_the_hard_images_of_its_caption() -> None:
    """Image A has two captions with different swaps: a row whose hard image is A with the
    caption "a brown dog lies" gets a swap of that caption, never of A's other caption."""
    data = examples()
    captions = {c: (i, c) for i, c in NEGS}
    for epoch in range(12):
        for cap, neg, hard_cap, hard in one_epoch(data, 0, epoch, "per_epoch"):
            assert neg in NEGS[captions[cap]]
            assert hard_cap == HARD[captions[cap]][1]
            assert hard in NEGS[HARD[captions[cap]]], (cap, hard)


def test_the_per_epoch_draw_is_uniform_seeded_and_reproducible() -> None:
    data = examples()
    seen: dict[str, set[str]] = {c: set() for _, c in NEGS}
    draws = []
    for epoch in range(30):
        got = by_caption(one_epoch(data, 7, epoch, "per_epoch"))
        draws.append(got)
        for cap, (neg, _) in got.items():
            seen[cap].add(neg)
    assert all(seen[c] == set(NEGS[(i, c)]) for i, c in NEGS)  # every negative is drawn
    assert len({tuple(sorted(d.items())) for d in draws}) > 1  # the draw changes by epoch
    assert by_caption(one_epoch(data, 7, 3, "per_epoch")) == draws[3]  # reproducible
    assert any(by_caption(one_epoch(data, 8, e, "per_epoch")) != draws[e] for e in range(30))
    # the documented generator: per example (manifest order) two uniforms of (seed, epoch)
    for epoch in (0, 5):
        u = np.random.default_rng([7, epoch, 1]).random((len(NEGS), 2))
        for k, ((_, cap), negs) in enumerate(NEGS.items()):
            hard = NEGS[HARD[list(NEGS)[k]]]
            want = (negs[int(u[k, 0] * len(negs))], hard[int(u[k, 1] * len(hard))])
            assert draws[epoch][cap] == want


def test_a_resumed_epoch_reads_the_same_negatives() -> None:
    data = examples()
    whole = one_epoch(data, 3, 2, "per_epoch", size=2)
    assert one_epoch(data, 3, 2, "per_epoch", skip=1, size=2) == whole[2:]


def test_the_first_draw_always_takes_the_first_negative() -> None:
    data = examples()
    for epoch in range(3):
        for cap, (neg, hard) in by_caption(one_epoch(data, 0, epoch, "first")).items():
            key = next(k for k in NEGS if k[1] == cap)
            assert (neg, hard) == (NEGS[key][0], NEGS[HARD[key]][0])


def test_negclip_refuses_a_hard_caption_without_a_row_of_its_own() -> None:
    """The hard image exists as a row, but not with the caption the row names: refused."""
    from lexsem.train.loop import needs

    ok = rows()
    needs("negclip", ok, lambda ex: ex.caption)
    bad = [*ok[:-1], Example(image="C", caption="a red car", negatives=("a car red",),
                             negative_image="A", negative_image_caption="a dog lying")]  # fmt: skip
    with pytest.raises(DataError, match="a dog lying"):
        needs("negclip", bad, lambda ex: ex.caption)


def test_the_regimes_draw_and_the_presets() -> None:
    from lexsem.train.config import PRESETS, TrainConfig

    base = {"model": "x", "manifest": "m.jsonl", "out": "o"}
    assert TrainConfig(**base, regime="negclip").draw == "per_epoch"
    assert TrainConfig(**base, regime="trohn_text").draw == "first"
    assert TrainConfig(**base, regime="negclip", negative_draw="first").draw == "first"
    assert PRESETS["negclip"]["negative_draw"] == "per_epoch"

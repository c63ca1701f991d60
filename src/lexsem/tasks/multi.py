"""ARO multi-caption tasks (Yuksekgonul et al., "When and why vision-language models behave
like bags-of-words", ICLR 2023, §2): per-item hits and the paper's aggregates.

- ARO: one image, the true caption at index 0 and one (VG-Relation, VG-Attribution) or four
  (COCO-Order, Flickr30k-Order) false captions; hit = the true caption scores strictly highest.
  VG-Relation / VG-Attribution are reported, as in the paper, as a macro average over relations /
  attributes (`aro_macro`, the "paper preset"), and also as a micro average over items
  (`aro_micro`). Every aggregate says which one it is.

Ties in the reference code (mertyg/vision-language-models-are-bows, `dataset_zoo/aro_datasets.py`):
predictions are `np.argmax` over the caption scores, which picks the first maximum. VG-R / VG-A
list the captions as [false, true], so a tie counts as a miss (= `strict` here); COCO-Order and
Flickr30k-Order list the true caption first, so a tie counts as a hit (= `lenient` here). lexsem
defaults to `strict` everywhere and reports the number of ties; `lenient` reproduces the
reference exactly on the order benchmarks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from lexsem.stats.bootstrap import Accuracy, confidence_interval, macro_mean, micro_mean
from lexsem.stats.ties import Hits, TiePolicy, beats, check_policy
from lexsem.tasks.base import Column, Columns, Task

# ---------------------------------------------------------------------------------------------
# ARO (one true caption, one or more false captions)


def multi_caption_hits(scores: np.ndarray, policy: TiePolicy = "strict") -> Hits:
    """ARO: the true caption (column 0) scores strictly highest among all captions of the item.

    `scores` is (n, k), k >= 2: s(I, caption_j) with caption 0 the true one. Under `strict` a
    tie between the true caption and the best false caption is a miss; under `lenient` it is a
    hit (>=). Ties are flagged either way. Ties among false captions do not matter.
    """
    policy = check_policy(policy)
    s = np.asarray(scores)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"expected an (n, k) score matrix with k >= 2 captions, got {s.shape}")
    best_false = s[:, 1:].max(axis=1)
    return beats(s[:, 0], best_false, policy)


# The symmetric relations that the ARO paper leaves out of the VG-Relation macro average, copied
# verbatim (same order) from the reference: mertyg/vision-language-models-are-bows,
# `notebooks/Replicate ARO! VG-Relation, VG-Attribution.ipynb` (commit 42dbb5e), which filters
# `df[~df.Relation.isin(symmetric)]` before `df.Accuracy.mean()`. The same list appears in the
# evaluation code of later works built on ARO. 157 entries; note the last eight ("by", "of",
# "near", "next to", "with", "beside", "on the side of", "around"), which are easy to miss.
# fmt: off
ARO_SYMMETRIC_RELATIONS: frozenset[str] = frozenset(
    (
        "adjusting", "attached to", "between", "bigger than", "biting", "boarding", "brushing",
        "chewing", "cleaning", "climbing", "close to", "coming from", "coming out of", "contain",
        "crossing", "dragging", "draped over", "drinking", "drinking from", "driving",
        "driving down", "driving on", "eating from", "eating in", "enclosing", "exiting", "facing",
        "filled with", "floating in", "floating on", "flying", "flying above", "flying in",
        "flying over", "flying through", "full of", "going down", "going into", "going through",
        "grazing in", "growing in", "growing on", "guiding", "hanging from", "hanging in",
        "hanging off", "hanging over", "higher than", "holding onto", "hugging", "in between",
        "jumping off", "jumping on", "jumping over", "kept in", "larger than", "leading",
        "leaning over", "leaving", "licking", "longer than", "looking in", "looking into",
        "looking out", "looking over", "looking through", "lying next to", "lying on top of",
        "making", "mixed with", "mounted on", "moving", "on the back of", "on the edge of",
        "on the front of", "on the other side of", "opening", "painted on", "parked at",
        "parked beside", "parked by", "parked in", "parked in front of", "parked near",
        "parked next to", "perched on", "petting", "piled on", "playing", "playing in",
        "playing on", "playing with", "pouring", "reaching for", "reading", "reflected on",
        "riding on", "running in", "running on", "running through", "seen through",
        "sitting behind", "sitting beside", "sitting by", "sitting in front of", "sitting near",
        "sitting next to", "sitting under", "skiing down", "skiing on", "sleeping in",
        "sleeping on", "smiling at", "sniffing", "splashing", "sprinkled on", "stacked on",
        "standing against", "standing around", "standing behind", "standing beside",
        "standing in front of", "standing near", "standing next to", "staring at", "stuck in",
        "surrounding", "swimming in", "swinging", "talking to", "topped with", "touching",
        "traveling down", "traveling on", "tying", "typing on", "underneath", "wading in",
        "waiting for", "walking across", "walking by", "walking down", "walking next to",
        "walking through", "working in", "working on", "worn on", "wrapped around", "wrapped in",
        "by", "of", "near", "next to", "with", "beside", "on the side of", "around",
    )
)
# fmt: on

# VG-Attribution: the reference macro average only counts attribute pairs with >= 25 items
# (`if attr_mask.sum() < 25: continue` in VG_Attribution.evaluate_scores); VG-Relation keeps every
# relation with at least one item.
VGA_MIN_COUNT = 25
VGR_MIN_COUNT = 1

MACRO_PAPER = "macro"  # the paper preset: macro over labels, with the paper's exclusions
MICRO = "micro"  # every item counts once


@dataclass(frozen=True)
class LabelAccuracy:
    """Accuracy of one relation / attribute label."""

    label: str
    n: int
    hits: int
    ties: int
    accuracy: float  # percent


@dataclass(frozen=True)
class AroAggregate:
    """One labelled ARO aggregate: which average it is, over what, and what was left out."""

    kind: str  # MACRO_PAPER | MICRO
    description: str
    accuracy: float  # percent
    n_items: int  # items that entered the average
    n_labels: int | None  # labels averaged (macro); None for micro
    ties: int  # tied items among those that entered
    excluded_labels: tuple[str, ...]  # labels present in the data but left out
    ci_low: float | None = None  # percent; None when not computed
    ci_high: float | None = None
    hits: int = 0  # hits among the items that entered

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _labels_array(hits: Hits, labels: Sequence[str]) -> np.ndarray:
    lab = np.asarray(list(labels), dtype=object)
    if lab.shape != hits.hits.shape:
        raise ValueError(f"{len(lab)} labels for {hits.hits.shape[0]} items")
    return lab


def split_hits(hits: Hits, labels: Sequence[str]) -> dict[str, Hits]:
    """Hits per label (sorted by label, as `np.unique`), e.g. BiVLC type / ARO relation."""
    lab = _labels_array(hits, labels)
    out: dict[str, Hits] = {}
    for name in sorted(set(lab.tolist())):
        mask = lab == name
        out[str(name)] = Hits(hits.hits[mask], hits.ties[mask])
    return out


def aro_per_label(hits: Hits, labels: Sequence[str]) -> dict[str, LabelAccuracy]:
    """Accuracy per relation / attribute label (every label with at least one item)."""
    out: dict[str, LabelAccuracy] = {}
    for name, h in split_hits(hits, labels).items():
        n = len(h.hits)
        k = int(h.hits.sum())
        out[name] = LabelAccuracy(name, n, k, int(h.ties.sum()), 100.0 * k / n)
    return out


def aro_macro(
    hits: Hits,
    labels: Sequence[str],
    *,
    exclude: frozenset[str] | set[str] = frozenset(),
    min_count: int = 1,
    description: str = "macro average over labels",
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> AroAggregate:
    """Unweighted mean of the per-label accuracies, leaving out `exclude` and labels with fewer
    than `min_count` items. Optional percentile-bootstrap CI (items resampled within labels)."""
    kept: list[np.ndarray] = []
    ties = 0
    excluded: list[str] = []
    for name, h in split_hits(hits, labels).items():
        if name in exclude or len(h.hits) < min_count:
            excluded.append(name)
            continue
        kept.append(np.asarray(h.hits, dtype=np.float64))
        ties += int(h.ties.sum())
    if not kept:
        raise ValueError("no label left for the macro average (all excluded or too small)")
    acc = 100.0 * float(np.mean([k.mean() for k in kept]))
    lo, hi = confidence_interval(kept, macro_mean, n_boot, seed, confidence)
    return AroAggregate(
        MACRO_PAPER,
        description,
        acc,
        sum(len(k) for k in kept),
        len(kept),
        ties,
        tuple(excluded),
        lo,
        hi,
        int(sum(k.sum() for k in kept)),
    )


def aro_micro(
    hits: Hits,
    *,
    description: str = "micro average over all items",
    n_boot: int = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> AroAggregate:
    """Fraction of all items that are hits (every item counts once, nothing excluded)."""
    x = np.asarray(hits.hits, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("no items")
    lo, hi = confidence_interval([x], micro_mean, n_boot, seed, confidence)
    return AroAggregate(
        MICRO,
        description,
        100.0 * float(x.mean()),
        len(x),
        None,
        int(hits.ties.sum()),
        (),
        lo,
        hi,
        int(x.sum()),
    )


def vg_relation_aggregates(
    hits: Hits, relations: Sequence[str], *, n_boot: int = 0, seed: int = 0
) -> dict[str, AroAggregate]:
    """VG-Relation: {"macro": paper preset (macro over relations, symmetric relations removed),
    "micro": all items}."""
    return {
        MACRO_PAPER: aro_macro(
            hits,
            relations,
            exclude=ARO_SYMMETRIC_RELATIONS,
            min_count=VGR_MIN_COUNT,
            description="paper preset: macro average over relations, symmetric relations removed",
            n_boot=n_boot,
            seed=seed,
        ),
        MICRO: aro_micro(hits, n_boot=n_boot, seed=seed + 1),
    }


def vg_attribution_aggregates(
    hits: Hits, attributes: Sequence[str], *, n_boot: int = 0, seed: int = 0
) -> dict[str, AroAggregate]:
    """VG-Attribution: {"macro": paper preset (macro over attribute pairs with >= 25 items),
    "micro": all items}. Labels are the reference's `f"{attributes[0]}_{attributes[1]}"`."""
    return {
        MACRO_PAPER: aro_macro(
            hits,
            attributes,
            min_count=VGA_MIN_COUNT,
            description=(
                f"paper preset: macro average over attribute pairs with >= {VGA_MIN_COUNT} items"
            ),
            n_boot=n_boot,
            seed=seed,
        ),
        MICRO: aro_micro(hits, n_boot=n_boot, seed=seed + 1),
    }


# ---------------------------------------------------------------------------------------------
# Tasks

# ARO: s(I, caption_j), caption 0 the true one.
ARO_COLUMNS = tuple(f"s_i_c{j}" for j in range(5))


def _caption_column(j: int) -> Column:
    return Column(ARO_COLUMNS[j], "image_text", lambda it: (it.image, _caption(it, j)))


def _caption(item: object, j: int) -> str:
    captions = item.captions  # type: ignore[attr-defined]
    if j >= len(captions):
        from lexsem.errors import DataError

        raise DataError(f"has no caption #{j}", item=getattr(item, "id", None))
    return captions[j]


def _aro_task(name: str, description: str, k: int) -> Task:
    """An ARO task over `k` captions (caption 0 the true one): accuracy, chance 1/k."""

    def compute(c: Columns, policy: TiePolicy) -> dict[str, Hits]:
        scores = np.stack([c[col] for col in ARO_COLUMNS[:k]], axis=1)
        return {"acc": multi_caption_hits(scores, policy)}

    return Task(
        name,
        description,
        "multi",
        "image",
        tuple(_caption_column(j) for j in range(k)),
        ("acc",),
        compute,
        chance={"acc": 100.0 / k},
    )


ARO_VG = _aro_task(
    "aro_vg", "ARO VG-Relation / VG-Attribution: the true caption beats the false one", 2
)
ARO_ORDER = _aro_task(
    "aro_order", "ARO COCO/Flickr30k-Order: the true caption beats its 4 shuffles", 5
)


def labelled(agg: AroAggregate, subset: str, title: str) -> tuple[Accuracy, str]:
    """An ARO aggregate as an extra-aggregate row `_<subset>_<kind>`, with its label."""
    acc = Accuracy(
        f"_{subset}_{agg.kind}",
        agg.n_items,
        agg.hits,
        agg.ties,
        agg.accuracy,
        agg.ci_low,
        agg.ci_high,
    )
    return acc, f"{title}: {agg.description}"

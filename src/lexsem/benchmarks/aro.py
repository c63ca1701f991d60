"""ARO (Yuksekgonul et al., "When and why vision-language models behave like bags-of-words, and
what to do about it?", ICLR 2023): VG-Relation, VG-Attribution, COCO-Order, Flickr30k-Order.

VG-Relation and VG-Attribution are reported as the paper does, a macro average over relations
(symmetric ones removed) / attribute pairs (with >= 25 items), and as a micro average over all
items; both rows are labelled (see `lexsem.tasks.multi`).

The data are Hub mirrors of the ARO files (test splits, images embedded), one dataset per
subset (`DATASETS`): each row is an image, its true caption first, then the false ones."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.items import Item
from lexsem.benchmarks.sources.hf_dataset import HFDataset, MultiFields
from lexsem.benchmarks.sources.hf_load import HFLoadResult, load_hf_benchmark
from lexsem.benchmarks.sources.hf_subsets import hf_loader
from lexsem.errors import LexsemError
from lexsem.stats.bootstrap import Accuracy
from lexsem.stats.seeds import bootstrap_seed
from lexsem.stats.ties import Hits
from lexsem.tasks.multi import (
    ARO_SYMMETRIC_RELATIONS,
    MACRO_PAPER,
    VGA_MIN_COUNT,
    VGR_MIN_COUNT,
    aro_macro,
    aro_micro,
    labelled,
)

PAPER = "Yuksekgonul et al., When and why VLMs behave like bags-of-words, ICLR 2023"

_VG_CAPTIONS = ("true_caption", "false_caption")
_ORDER_CAPTIONS = ("correct_caption", "hard_text_1", "hard_text_2", "hard_text_3", "hard_text_4")


def _aro(subset: str, repo: str, fields: MultiFields, rows: int, notes: str) -> HFDataset:
    """The Hub dataset of one ARO subset: its test split, one row per image and its captions."""
    return HFDataset(
        f"aro_{subset}", repo, "test", "multi", fields, subset=subset, expected_rows=rows,
        notes=notes,
    )  # fmt: skip


# subset -> its Hub dataset
DATASETS: dict[str, HFDataset] = {
    d.subset: d
    for d in (
        _aro(
            "vg_relation",
            "gowitheflow/ARO-Visual-Relation",
            MultiFields("image", _VG_CAPTIONS, label="relation_name", bbox="bbox"),
            23937,
            "Columns from the dataset card: image, true_caption, false_caption, "
            "relation_name, bbox {x, y, w, h}. The images are the full Visual Genome images; "
            "the reference crops them to bbox (crop=True).",
        ),
        _aro(
            "vg_attribution",
            "gowitheflow/ARO-Visual-Attribution",
            MultiFields("image", _VG_CAPTIONS, label="attributes", bbox="bbox"),
            28748,
            "image, true_caption, false_caption confirmed by public evaluation code; "
            "'attributes' (the two attributes, joined as 'a_b' like the reference) and 'bbox' "
            "are ASSUMED to mirror the original JSON and VG-Relation - check the dataset card.",
        ),
        _aro(
            "coco_order",
            "gowitheflow/ARO-COCO-order",
            MultiFields("images", _ORDER_CAPTIONS),
            25010,
            "Columns from the dataset card: images, correct_caption, hard_text_1..4.",
        ),
        _aro(
            "flickr30k_order",
            "gowitheflow/ARO-Flickr-Order",
            MultiFields("images", _ORDER_CAPTIONS),
            5000,
            "Columns as COCO-order (images, correct_caption, hard_text_1..4), per public "
            "evaluation code.",
        ),
    )
}


def load(subset: str, **kwargs: Any) -> HFLoadResult:
    """One ARO subset's items and images (vg_relation, vg_attribution, coco_order or
    flickr30k_order); keyword arguments as `load_hf_benchmark`."""
    try:
        dataset = DATASETS[subset]
    except KeyError:
        raise LexsemError(f"unknown ARO subset {subset!r}; known: {', '.join(DATASETS)}") from None
    return load_hf_benchmark(dataset, **kwargs)


# subset -> (title, relations/attributes left out, fewest items a label needs, description)
_PRESETS = {
    "vg_relation": (
        "VG-Relation",
        ARO_SYMMETRIC_RELATIONS,
        VGR_MIN_COUNT,
        "macro over relations, symmetric relations removed (paper preset)",
    ),
    "vg_attribution": (
        "VG-Attribution",
        frozenset(),
        VGA_MIN_COUNT,
        f"macro over attribute pairs with >= {VGA_MIN_COUNT} items (paper preset)",
    ),
}


def vg_aggregates(
    task: str,
    metric: str,
    by_subset: Mapping[str, Hits],
    items: Mapping[str, list[Item]],
    boot: dict[str, Any],
) -> list[tuple[Accuracy, str]]:
    """The paper-preset macro and the micro average of each VG subset, labelled. The macro row
    is left out when no label has enough items (tiny data)."""
    rows: list[tuple[Accuracy, str]] = []
    for subset, (title, exclude, min_count, description) in _PRESETS.items():
        hits = by_subset.get(subset)
        if hits is None or not len(hits.hits):
            continue
        labels = [it.label for it in items[subset]]  # type: ignore[union-attr]
        n_boot = boot["n_boot"]
        with contextlib.suppress(ValueError):  # no label qualifies
            macro = aro_macro(
                hits,
                labels,
                exclude=exclude,
                min_count=min_count,
                description=description,
                n_boot=n_boot,
                seed=bootstrap_seed(boot["seed"], subset, MACRO_PAPER),
            )
            rows.append(labelled(macro, subset, title))
        # the subset's own row resamples the same items with the same seed: the same interval
        seed = bootstrap_seed(boot["seed"], subset)
        micro = aro_micro(hits, description="micro over all items", n_boot=n_boot, seed=seed)
        rows.append(labelled(micro, subset, title))
    return rows


def _aro(name: str, description: str, expected: Mapping[str, int], **extra: Any) -> Benchmark:
    """An ARO benchmark of the subsets `expected` (name -> items), read from their HF mirrors
    and scored by its task of the same name (`lexsem.tasks.multi`)."""
    return Benchmark(
        name=name,
        description=description,
        item_kind="multi",
        subsets=tuple(SubsetSpec(s, None, expected_items=n) for s, n in expected.items()),
        loader=hf_loader({s: DATASETS[s] for s in expected}),
        text_tasks=(),
        image_tasks=(name,),
        origin="hf",
        paper=PAPER,
        images="embedded (HF mirrors of the ARO files)",
        decode="default",  # the reference reads the files with PIL: no EXIF, RGB first
        **extra,
    )


VG = _aro(
    "aro_vg",
    "ARO VG-Relation and VG-Attribution (image + true + false caption)",
    {"vg_relation": 23937, "vg_attribution": 28748},
    extra_aggregates=vg_aggregates,
)
ORDER = _aro(
    "aro_order",
    "ARO COCO-Order and Flickr30k-Order (image + true + 4 shuffled captions)",
    {"coco_order": 25010, "flickr30k_order": 5000},
)

"""BiVLC (Miranda et al., "BiVLC: Extending Vision-Language Compositionality Evaluation with
Text-to-Image Retrieval", NeurIPS 2024 Datasets & Benchmarks): image-to-text and text-to-image
with generated negative images; I2T, T2I, Group per subset and per type (§4, Tables 2-4).

The data is the Hub dataset `imirandam/BiVLC` (test split, 2933 rows; images embedded): each row
is one quad, (image, caption) and (negative_image, negative_caption) the true pairs."""

from __future__ import annotations

from typing import Any

from lexsem.benchmarks.base import Aggregate, Benchmark, SubsetSpec
from lexsem.benchmarks.sources.hf_dataset import HFDataset, QuadFields
from lexsem.benchmarks.sources.hf_load import HFLoadResult, load_hf_benchmark
from lexsem.benchmarks.sources.hf_subsets import hf_loader
from lexsem.tasks.pair import SUGARCREPE_GROUPS

DATASET = HFDataset(
    "bivlc",
    "imirandam/BiVLC",
    "test",
    "quad",
    QuadFields(
        "image",
        "caption",
        "negative_image",
        "negative_caption",
        groups=("type", "subtype"),
        subset=("type", "subtype"),
    ),
    subset="all",
    expected_rows=2933,
    expected_subsets=(
        ("replace_obj", 1200),
        ("replace_att", 437),
        ("replace_rel", 462),
        ("swap_obj", 81),
        ("swap_att", 278),
        ("add_obj", 399),
        ("add_att", 76),
    ),
    notes="Fields from the BiVLC paper, App. B (image, caption, negative_caption, "
    "negative_image, type, subtype). No id column: the item id is the row number. "
    "item.subset is '<type>_<subtype>' (e.g. 'replace_obj', as in SugarCrepe).",
)


def load(**kwargs: Any) -> HFLoadResult:
    """BiVLC's items and images; keyword arguments as `load_hf_benchmark`."""
    return load_hf_benchmark(DATASET, **kwargs)


BENCHMARK = Benchmark(
    name="bivlc",
    description="BiVLC: image-to-text and text-to-image with generated negative images",
    item_kind="quad",
    subsets=tuple(SubsetSpec(n, None, expected_items=c) for n, c in DATASET.expected_subsets),
    loader=hf_loader(DATASET),
    text_tasks=(),
    image_tasks=("bivlc",),
    origin="hf",
    # BiVLC Table 4 pools the items of each type (REPLACE / SWAP / ADD)
    aggregates=tuple(
        Aggregate(name, members, "micro", f"{name.upper()}: all items of the {name} type")
        for name, members in SUGARCREPE_GROUPS.items()
    ),
    paper="Miranda et al., BiVLC, NeurIPS 2024 Datasets & Benchmarks",
    images="embedded (HF imirandam/BiVLC)",
    decode="hf_datasets",
)

"""Winoground (Thrush et al., "Winoground: Probing Vision and Language Models for
Visio-Linguistic Compositionality", CVPR 2022): text, image and group scores (§3).

The data is the gated Hub dataset `facebook/winoground` (test split, 400 rows; accept its terms
on the Hub and provide a token): each row is one quad, (image_0, caption_0) and (image_1,
caption_1) the true pairs."""

from __future__ import annotations

from typing import Any

from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.sources.hf_dataset import HFDataset, QuadFields
from lexsem.benchmarks.sources.hf_load import HFLoadResult, load_hf_benchmark
from lexsem.benchmarks.sources.hf_subsets import hf_loader

DATASET = HFDataset(
    "winoground",
    "facebook/winoground",
    "test",
    "quad",
    QuadFields(
        "image_0",
        "caption_0",
        "image_1",
        "caption_1",
        id="id",
        groups=("tag", "secondary_tag", "num_main_preds", "collapsed_tag"),
    ),
    subset="all",
    gated=True,
    expected_rows=400,
    notes="Gated (accept the terms on the Hub). The Hub repo holds a loading script, which "
    "`datasets>=4` refuses; the loader then reads the Hub's parquet export (revision "
    "refs/convert/parquet).",
)


def load(**kwargs: Any) -> HFLoadResult:
    """Winoground's items and images; keyword arguments as `load_hf_benchmark`."""
    return load_hf_benchmark(DATASET, **kwargs)


BENCHMARK = Benchmark(
    name="winoground",
    description="Winoground (gated on the Hub: set HF_TOKEN and accept the terms)",
    item_kind="quad",
    subsets=(SubsetSpec("all", None, expected_items=400),),
    loader=hf_loader(DATASET),
    text_tasks=(),
    image_tasks=("winoground",),
    origin="hf",
    paper="Thrush et al., Winoground, CVPR 2022",
    images="embedded (HF facebook/winoground)",
    decode="hf_datasets",
)

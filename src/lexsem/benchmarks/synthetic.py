"""lexsem's own generated benchmarks: procedurally rendered scenes with templated captions, as
triplets (`synthetic`, SugarCrepe++ protocol) and as quads (`synthetic_bi`, BiVLC protocol)."""

from __future__ import annotations

from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.sources import synthetic_images
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.benchmarks.sources.generated import generated_loader


def _triplets_sha256() -> str:
    return synthetic.content_sha256(synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET)


SUBSETS = tuple(
    SubsetSpec(name, None, expected_items=synthetic.DEFAULT_PER_SUBSET)
    for name in synthetic.SUBSETS
)

TRIPLETS = Benchmark(
    name="synthetic",
    description="lexsem's own procedurally generated triplets (templates over scenes)",
    item_kind="triplet",
    subsets=SUBSETS,
    loader=generated_loader(synthetic.load_synthetic, _triplets_sha256),
    text_tasks=("tot",),
    image_tasks=("itt",),
    origin="generated",
    paper="lexsem (generated; no paper)",
    images="rendered procedurally (synthetic:<scene id>)",
)

QUADS = Benchmark(
    name="synthetic_bi",
    description="lexsem's synthetic scenes as BiVLC-style quads (positive and negative images)",
    item_kind="quad",
    subsets=SUBSETS,
    loader=generated_loader(
        synthetic_images.load_synthetic_bidirectional,
        synthetic_images.bidirectional_content_sha256,
    ),
    text_tasks=(),
    image_tasks=("bivlc",),
    origin="generated",
    paper="lexsem (generated; BiVLC protocol)",
    images="rendered procedurally (synthetic:<scene id>)",
)

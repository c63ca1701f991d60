"""VISLA (Dumpala et al., "VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and
Lexical Alterations"): generic and spatial triplets, T2T and I2T with P1-N / P2-N (§3)."""

from __future__ import annotations

from lexsem.benchmarks.base import Benchmark
from lexsem.benchmarks.formats import load_visla_generic_tsv, load_visla_spatial_tsv
from lexsem.benchmarks.sources.files import Parser, file_loader, file_subset

URL = "https://raw.githubusercontent.com/Sri-Harsha/visla_benchmark/adedd6974a3448ac9881466f801483dda13282e1/data"
PAPER = "Dumpala et al., VISLA (Visual-Language Semantic Sensitivity)"


def _visla(
    kind: str,
    description: str,
    file: str,
    sha256: str,
    parse: Parser,
    images: str,
    *,
    expected_items: int,
    paper_items: int,
    drop_incomplete: bool = False,
) -> Benchmark:
    """VISLA's `kind` benchmark (one subset of that name), read from `file` of the authors'
    repository and scored by T2T and I2T."""
    return Benchmark(
        name=f"visla_{kind}",
        description=description,
        item_kind="triplet",
        subsets=(file_subset(kind, "visla", URL, file, sha256, expected_items, paper_items),),
        drop_incomplete=drop_incomplete,
        loader=file_loader(parse),
        text_tasks=("t2t",),
        image_tasks=("i2t",),
        paper=PAPER,
        images=images,
        decode="open_clip_raw",  # assumed as SugarCrepe++ (same authors; no public eval code)
    )


GENERIC = _visla(
    "generic",
    "VISLA generic: two paraphrases + a lexically close negative",
    "Generic_VISLA.tsv",
    "99cad867a688d70af10e08ed2548720c95f88d774fb3e5e41bf6fddcab3fc6a6",
    load_visla_generic_tsv,
    "COCO val2017",
    expected_items=973,
    paper_items=973,
)

SPATIAL = _visla(
    "spatial",
    "VISLA spatial: spatial-relation paraphrases + a lexically close negative",
    "Spatial_VISLA.tsv",
    "f1ec14db70183bf6748cf71324e98062f9f7c395d8202f60dbfabb7a6f1ab891",
    load_visla_spatial_tsv,
    "COCO train2017 + val2017 (via VSR)",
    expected_items=652,
    paper_items=640,  # 12 rows have an empty negative; 652 - 12 = 640, the paper's count
    drop_incomplete=True,
)

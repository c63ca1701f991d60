"""Per-item results pinned across refactors: every registered benchmark x every task.

Each case runs one deterministic model (bag-of-words text encoder, tiny dual encoder, hashed
pair scorer, hashed blind scorer) through `lexsem.evaluator` on the real public files where
`LEXSEM_TEST_DATA` has them (SugarCrepe, SugarCrepe++, VISLA; images generated under the COCO
file names), on the generated benchmarks, and on small parquet fixtures in the Hugging Face
formats (BiVLC, Winoground, ARO). The per-item table (ids, hits, ties, every score column) is
stored under tests/golden/items/ and compared by `builders.golden_items.compare_to_golden`:
exact where exact, float scores within the fp32 tolerance, a flipped hit whose two scores tie
within it reported as fragile (docs/testing.md). `LEXSEM_UPDATE_GOLDEN=1 pytest
tests/test_golden_items.py` rewrites the tables (only when a change in the numbers is intended
and explained in docs/fidelity.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders.fakes import BagOfWordsEncoder, TinyDualEncoder, oracle_key
from builders.golden_items import FragileHitWarning, compare_to_golden, write_golden
from builders.hf_parquet import (
    bivlc_columns,
    order_columns,
    vg_attribution_columns,
    vg_relation_columns,
    winoground_columns,
    write_parquet,
)
from lexsem import evaluate

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

GOLDEN = Path(__file__).parent / "golden" / "items"
UPDATE = os.environ.get("LEXSEM_UPDATE_GOLDEN") == "1"

HF_FIXTURES = {
    "imirandam/BiVLC": bivlc_columns,
    "facebook/winoground": winoground_columns,
    "gowitheflow/ARO-Visual-Relation": vg_relation_columns,
    "gowitheflow/ARO-Visual-Attribution": vg_attribution_columns,
    "gowitheflow/ARO-COCO-order": order_columns,
    "gowitheflow/ARO-Flickr-Order": lambda: order_columns(3),
}


class HashPairScorer:
    """A deterministic pair scorer: a hash of the image's pixels and the text, in [0, 1)."""

    name = "hash-pair"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-hash-pair"}

    def preprocess(self, image: Any) -> Any:
        return oracle_key(image)

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        out = []
        for im, t in zip(images, texts, strict=True):
            key = bytes(np.asarray(im, dtype=np.uint8).tolist()) + t.encode()
            out.append(int(hashlib.sha256(key).hexdigest()[:8], 16) / 2**32)
        return np.asarray(out, dtype=np.float32)


class HashTextScorer:
    """A deterministic blind scorer (lower is better): length plus a hashed fraction."""

    name = "hash-text"
    lower_is_better = True

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-hash-text"}

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        return np.asarray(
            [len(t) % 7 + int(hashlib.md5(t.encode()).hexdigest()[:6], 16) / 2**24 for t in texts]
        )


@pytest.fixture(scope="module")
def golden_data(test_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("golden")
    data = root / "data"
    for sub in ("sugarcrepe", "sugarcrepe_pp", "visla"):
        shutil.copytree(test_data_dir / sub, data / sub)
    for repo, columns in HF_FIXTURES.items():
        write_parquet(data / "hf" / repo / "data" / "test-00000-of-00001.parquet", columns())
    names: set[str] = set()
    for f in [*(data / "sugarcrepe").glob("*.json"), *(data / "sugarcrepe_pp").glob("*.json")]:
        rows = json.loads(f.read_text())
        names |= {r["filename"] for r in (rows.values() if isinstance(rows, dict) else rows)}
    for f in (data / "visla").glob("*.tsv"):
        names |= {line.split("\t")[0] for line in f.read_text().splitlines()[1:] if line}
    images = root / "val2017"
    images.mkdir()
    for name in sorted(names):
        seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
        arr = np.random.default_rng(seed).integers(0, 255, (12, 16, 3), dtype=np.uint8)
        Image.fromarray(arr).save(images / name, quality=90)
    return {"data": data, "images": images}


CASES = {
    "sugarcrepe": ["dual", "pair", "blind"],
    "sugarcrepe_pp": ["text", "dual", "pair", "blind"],
    "visla_generic": ["text", "dual", "pair", "blind"],
    "visla_spatial": ["text", "dual", "blind"],
    "synthetic": ["text", "dual", "pair", "blind"],
    "synthetic_bi": ["dual", "pair"],
    "bivlc": ["dual", "pair"],
    "winoground": ["dual", "pair"],
    "aro_vg": ["dual", "pair", "blind"],
    "aro_order": ["dual", "pair", "blind"],
}


def _model(kind: str) -> Any:
    return {
        "text": BagOfWordsEncoder,
        "dual": TinyDualEncoder,
        "pair": HashPairScorer,
        "blind": HashTextScorer,
    }[kind]()


@pytest.mark.data
@pytest.mark.parametrize(
    "bench,kind", [(b, k) for b, kinds in CASES.items() for k in kinds], ids=lambda x: str(x)
)
def test_items_unchanged(bench: str, kind: str, golden_data: dict[str, Path]) -> None:
    text_task = ["t2t"] if bench.startswith("visla") else ["tot"]
    tasks = text_task if kind == "text" else None
    run = evaluate(
        _model(kind),
        [bench],
        tasks=tasks,
        data_dir=golden_data["data"],
        coco_val2017=golden_data["images"],
        coco_train2017=golden_data["images"],
        n_boot=0,
        num_workers=0,
    )
    assert run.items.num_rows > 0
    path = GOLDEN / f"{bench}__{kind}.parquet"
    if UPDATE:
        write_golden(path, run.items)
        return
    assert path.exists(), f"no golden table for {bench}:{kind} ({path})"
    for flip in compare_to_golden(run.items, path):
        warnings.warn(flip, FragileHitWarning, stacklevel=1)

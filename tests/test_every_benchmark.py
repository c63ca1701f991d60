"""Every registered benchmark x every task through one path: `Evaluator(config).run(model)`.

Each benchmark runs on tiny fixtures in its own format (files whose pinned sha256 is swapped for
the fixture's; generated benchmarks as they are; Hugging Face formats as small parquet files)
with an oracle model, which must score 100%, and a constant model, which must score 0% under
strict ties (every comparison tied), for every metric and aggregate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders.fakes import ConstantPairScorer, OraclePairScorer, image_key_of
from builders.hf_parquet import (
    bivlc_columns,
    image_cell,
    order_columns,
    vg_attribution_columns,
    vg_relation_columns,
    winoground_columns,
    write_parquet,
)
from lexsem.benchmarks import catalog as registry
from lexsem.benchmarks.base import Benchmark
from lexsem.benchmarks.items import MultiCaptionItem, PairItem, QuadItem, TripletItem
from lexsem.benchmarks.load import load_benchmark
from lexsem.benchmarks.sources import synthetic_images
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.benchmarks.sources.generated import generated_loader
from lexsem.config import EvalConfig
from lexsem.download import SourceFile
from lexsem.evaluator import Evaluator
from lexsem.images.image_store import ImageStore
from lexsem.tasks.catalog import get_task

RNG_SEED = 7


def _png(seed: int, size: tuple[int, int] = (24, 18)) -> bytes:
    arr = np.random.default_rng(seed).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _distinct_images(columns: dict[str, list[Any]], offset: int) -> dict[str, list[Any]]:
    """Replace every image cell by a distinct random image (the oracle keys images by pixels)."""
    out = dict(columns)
    for c_i, (name, values) in enumerate(columns.items()):
        if values and isinstance(values[0], dict) and set(values[0]) == {"bytes", "path"}:
            out[name] = [image_cell(_png(offset + 100 * c_i + r)) for r in range(len(values))]
    return out


BIVLC_ROWS = [
    (f"caption {t} {s}", f"negative {t} {s}", t, s)
    for t, s in [
        ("replace", "obj"),
        ("replace", "att"),
        ("replace", "rel"),
        ("swap", "obj"),
        ("swap", "att"),
        ("add", "obj"),
        ("add", "att"),
    ]
]
HF_FIXTURES = {
    "imirandam/BiVLC": lambda: bivlc_columns(BIVLC_ROWS),
    "facebook/winoground": winoground_columns,
    "gowitheflow/ARO-Visual-Relation": vg_relation_columns,
    "gowitheflow/ARO-Visual-Attribution": vg_attribution_columns,
    "gowitheflow/ARO-COCO-order": order_columns,
    "gowitheflow/ARO-Flickr-Order": lambda: order_columns(3),
}

SCPP_ROWS = [
    ("A cat chases a dog.", "A dog is chased by a cat.", "A dog chases a cat."),
    ("A man rides a horse.", "A horse carries a man.", "A horse rides a man."),
]
SC_ROWS = [("A red ball on a box.", "A red box on a ball."), ("Two dogs run.", "Two dogs sit.")]


def _file_fixtures(data: Path) -> dict[str, bytes]:
    """Tiny files in each public format, written where the registry looks for them."""
    files: dict[str, bytes] = {}
    scpp = [
        {"id": i, "filename": f"scpp{i}.jpg", "caption": p, "caption2": q, "negative_caption": n}
        for i, (p, q, n) in enumerate(SCPP_ROWS)
    ]
    sc = {
        str(i): {"filename": f"sc{i}.jpg", "caption": p, "negative_caption": n}
        for i, (p, n) in enumerate(SC_ROWS)
    }
    for sub in ("swap_obj", "swap_att", "replace_obj", "replace_att", "replace_rel"):
        files[f"sugarcrepe_pp/{sub}.json"] = json.dumps(scpp).encode()
    for sub in (
        "add_att",
        "add_obj",
        "replace_att",
        "replace_obj",
        "replace_rel",
        "swap_att",
        "swap_obj",
    ):
        files[f"sugarcrepe/{sub}.json"] = json.dumps(sc).encode()
    generic = ["filename\tcaption\tsecond positive\tnegative_caption"]
    generic += [f"vg{i}.jpg\t{p}\t{q}\t{n}" for i, (p, q, n) in enumerate(SCPP_ROWS)]
    spatial = ["image\tsent1\tsent2\tBest reference (Semantically close)\tReference-2"]
    spatial += [f"vs{i}.jpg\t{p}\t{q}\t{n}\tx" for i, (p, q, n) in enumerate(SCPP_ROWS)]
    spatial.append("vs9.jpg\tA cup.\tOne cup.\t\tx")  # an incomplete row: dropped, recorded
    files["visla/Generic_VISLA.tsv"] = "\n".join(generic).encode()
    files["visla/Spatial_VISLA.tsv"] = "\n".join(spatial).encode()
    for name, blob in files.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_bytes(blob)
    return files


def _with_fixture_hashes(bench: Benchmark, files: dict[str, bytes]) -> Benchmark:
    subsets = tuple(
        dataclasses.replace(
            s,
            source=SourceFile(
                s.source.name, s.source.url, hashlib.sha256(files[s.source.name]).hexdigest()
            ),
        )
        if s.source is not None
        else s
        for s in bench.subsets
    )
    return dataclasses.replace(bench, subsets=subsets)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("every")
    data = root / "data"
    files = _file_fixtures(data)
    for k, (repo, columns) in enumerate(HF_FIXTURES.items()):
        cols = _distinct_images(columns(), 1000 * (k + 1))
        write_parquet(data / "hf" / repo / "data" / "test-00000-of-00001.parquet", cols)
    images = root / "images"
    images.mkdir()
    names = [f"scpp{i}.jpg" for i in range(2)] + [f"sc{i}.jpg" for i in range(2)]
    names += [f"vg{i}.jpg" for i in range(2)] + [f"vs{i}.jpg" for i in (0, 1, 9)]
    for i, name in enumerate(names):
        Image.open(io.BytesIO(_png(50 + i))).save(images / name, quality=95)
    return {"data": data, "images": images, "files": files}


TINY_PER_SUBSET = 3


def _tiny_triplets(path: Any, subset: str, *, strict: bool = True) -> list[Any]:
    gen = synthetic._generation(synthetic.DEFAULT_SEED, TINY_PER_SUBSET)
    return [t.item for t in gen if t.item.subset == subset]


def _tiny_quads(path: Any, subset: str, *, strict: bool = True) -> list[Any]:
    gen = synthetic_images._bi_generation(synthetic.DEFAULT_SEED, TINY_PER_SUBSET)
    return [b.quad for b in gen if b.quad.subset == subset]


def _tiny(bench: Benchmark) -> Benchmark:
    """A generated benchmark with 3 items per subset (the full generation reuses a text as a
    positive in one scene and the negative in another, which no text-only oracle can solve)."""
    make = _tiny_quads if bench.item_kind == "quad" else _tiny_triplets
    return dataclasses.replace(bench, loader=generated_loader(make, lambda: "tiny"))


@pytest.fixture
def patched(fixtures: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(registry.BENCHMARKS, "_entries", dict(registry.BENCHMARKS._entries))
    for name in registry.names():
        bench = registry.get(name)
        if bench.origin == "files":
            bench = _with_fixture_hashes(bench, fixtures["files"])
        elif bench.origin == "generated":
            bench = _tiny(bench)
        registry.BENCHMARKS.add(name, bench, replace=True)
    return fixtures


def _config(fx: dict[str, Any], bench: str, **kw: Any) -> EvalConfig:
    return EvalConfig(
        benchmarks=[bench],
        data_dir=fx["data"],
        coco_val2017=fx["images"],
        coco_train2017=fx["images"],
        n_boot=0,
        num_workers=0,
        **kw,
    )


# -- oracle and constant models --------------------------------------------------------------


def _positives(item: Any) -> tuple[list[str], list[str]]:
    """(true texts, false texts) of an item."""
    if isinstance(item, TripletItem):
        return [item.p1, item.p2], [item.n]
    if isinstance(item, PairItem):
        return [item.pos], [item.neg]
    if isinstance(item, MultiCaptionItem):
        return [item.captions[0]], list(item.captions[1:])
    raise TypeError(type(item))


def _image_truth(items: Sequence[Any], store: ImageStore) -> dict[bytes, set[str]]:
    truth: dict[bytes, set[str]] = {}
    for it in items:
        if isinstance(it, QuadItem):
            pairs = [(it.image0, it.caption0), (it.image1, it.caption1)]
        else:
            pairs = [(it.image, t) for t in _positives(it)[0]]
        for ref, text in pairs:
            truth.setdefault(image_key_of(store.read(ref)), set()).add(text)
    return truth


class OracleTextEncoder:
    """P1 and P2 of an item share one direction; its N points elsewhere."""

    name = "oracle-text"

    def __init__(self, items: Sequence[Any]) -> None:
        self.vectors: dict[str, np.ndarray] = {}
        dim = 2 * len(items) + 1
        for k, it in enumerate(items):
            pos, neg = _positives(it)
            for t in pos:
                self.vectors[t] = np.eye(dim, dtype=np.float32)[2 * k]
            for t in neg:
                self.vectors[t] = np.eye(dim, dtype=np.float32)[2 * k + 1]

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-oracle-text", "n": len(self.vectors)}

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


class ConstantTextEncoder:
    name = "constant-text"
    fingerprint = {"backend": "test-constant-text"}  # noqa: RUF012

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)


class OracleTextScorer:
    """A blind scorer that knows which texts are true (higher is better)."""

    name = "oracle-blind"
    lower_is_better = False

    def __init__(self, items: Sequence[Any]) -> None:
        self.true = {t for it in items for t in _positives(it)[0]}

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-oracle-blind", "n": len(self.true)}

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        return np.array([float(t in self.true) for t in texts])


class ConstantTextScorer:
    name = "constant-blind"
    lower_is_better = True
    fingerprint = {"backend": "test-constant-blind"}  # noqa: RUF012

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        return np.zeros(len(texts))


def _models(task: str, items: list[Any], store: ImageStore) -> tuple[Any, Any]:
    modality = "blind" if task == "blind" else get_task(task).modality
    if modality == "blind":
        return OracleTextScorer(items), ConstantTextScorer()
    if modality == "text":
        return OracleTextEncoder(items), ConstantTextEncoder()
    oracle = OraclePairScorer(_image_truth(items, store))
    if get_task(task).probability_scores:  # 0.5 is P(yes) = P(no): every answer a tie
        return oracle, ConstantPairScorer(0.5)
    return oracle, ConstantPairScorer()


def _cases() -> list[tuple[str, str]]:
    cases = []
    for name in registry.names():
        bench = registry.get(name)
        tasks = list(bench.tasks) + ([] if bench.item_kind == "quad" else ["blind"])
        cases += [(name, t) for t in tasks]
    return cases


@pytest.mark.parametrize("bench,task", _cases(), ids=lambda x: str(x))
def test_oracle_100_constant_0(bench: str, task: str, patched: dict[str, Any]) -> None:
    evaluator = Evaluator(_config(patched, bench, tasks=[task]))
    items = evaluator.benchmarks()[0].items
    assert items, f"{bench}: no items"
    oracle, constant = _models(task, items, evaluator.image_store())
    good = evaluator.run(oracle)
    bad = evaluator.run(constant)
    expected = {task} if task == "blind" else set(get_task(task).metrics)
    assert {r.metric for r in good.record.results} == expected
    for r in good.record.results:
        assert r.accuracy == 100.0, (bench, task, r)
    for r in bad.record.results:
        assert r.accuracy == 0.0, (bench, task, r)
        assert r.ties == r.n
    assert good.items.num_rows == len(items) * len(expected)


def test_aro_paper_preset_is_reported_and_labelled(patched: dict[str, Any]) -> None:
    evaluator = Evaluator(_config(patched, "aro_vg"))
    items = evaluator.benchmarks()[0].items
    run = evaluator.run(OraclePairScorer(_image_truth(items, evaluator.image_store())))
    rows = {r.subset: r for r in run.record.results}
    macro = rows["_vg_relation_macro"]
    assert macro.label is not None and "paper preset" in macro.label
    assert "symmetric relations removed" in macro.label
    assert rows["_vg_relation_micro"].label is not None
    assert "micro" in rows["_vg_relation_micro"].label
    # the fixture's attribute pairs have < 25 items each: no paper-preset macro for them
    assert "_vg_attribution_macro" not in rows
    assert rows["_vg_attribution_micro"].n == len(
        [it for it in items if it.subset == "vg_attribution"]
    )


def test_spatial_incomplete_row_dropped_and_recorded(patched: dict[str, Any]) -> None:
    run = Evaluator(_config(patched, "visla_spatial")).run(
        OracleTextEncoder(load_benchmark("visla_spatial", data_dir=patched["data"]).items)
    )
    assert run.record.benchmarks[0].dropped == {"spatial": ["2"]}

"""Image tasks end to end through `lexsem.evaluator`: dual encoders, pair scorers, images."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from builders.fakes import (
    ConstantPairScorer,
    OraclePairScorer,
    TinyDualEncoder,
    cosine,
    image_key_of,
    register_fixture_benchmark_with_images,
)
from lexsem import evaluate
from lexsem.benchmarks.load import load_benchmark
from lexsem.errors import DataError
from lexsem.images.image_store import ImageStore
from lexsem.stats.bootstrap import MICRO


def _true_pairs(selectors: list[str]) -> dict[bytes, set[str]]:
    store = ImageStore()
    truth: dict[bytes, set[str]] = {}
    for sel in selectors:
        for it in load_benchmark(sel).items:
            if hasattr(it, "p1"):
                pairs = [(it.image, it.p1), (it.image, it.p2)]
            else:
                pairs = [(it.image0, it.caption0), (it.image1, it.caption1)]
            for ref, text in pairs:
                truth.setdefault(image_key_of(store.read(ref)), set()).add(text)
    return truth


def test_dual_encoder_hits_match_direct_computation() -> None:
    enc = TinyDualEncoder()
    run = evaluate(enc, ["synthetic/swap_att"], n_boot=0, num_workers=0)
    assert run.record.config.tasks == ["itt", "tot"]
    n_encoded = enc.images_encoded
    store = ImageStore()
    from lexsem.images.decode import decode_image

    rows = [r for r in run.items.to_pylist() if r["metric"] == "itt"]
    items = {it.id: it for it in load_benchmark("synthetic/swap_att").items}
    for r in rows:
        it = items[r["item_id"]]
        img = enc.encode_images(
            np.stack([enc.preprocess(decode_image(store.read(it.image), exif_transpose=False))])
        )[0]
        s1, s2, sn = (cosine(img, enc.vector(t)) for t in (it.p1, it.p2, it.n))
        assert r["s_i_p1"] == pytest.approx(s1, abs=1e-5)
        assert r["hit"] == (s1 > sn and s2 > sn)
    # each unique image encoded once; a warm rerun encodes nothing
    assert n_encoded == len({it.image for it in items.values()})
    enc2 = TinyDualEncoder()
    again = evaluate(enc2, ["synthetic/swap_att"], n_boot=0, num_workers=0)
    assert enc2.image_calls == 0 and enc2.calls == 0
    assert again.record.timings.n_images_cached == run.record.timings.n_images_unique
    assert [r.accuracy for r in again.record.results] == [r.accuracy for r in run.record.results]


def test_oracle_scores_100_and_constant_0() -> None:
    sels = ["synthetic/replace_rel", "synthetic_bi/swap_obj"]
    oracle = OraclePairScorer(_true_pairs(sels))
    run = evaluate(oracle, sels, n_boot=0, num_workers=0)
    accs = {(r.benchmark, r.metric, r.subset): r.accuracy for r in run.record.results}
    assert accs, "no results"
    assert all(a == 100.0 for a in accs.values()), accs
    assert {"group", "i2t", "t2i"} <= {m for _, m, _ in accs}

    const = evaluate(ConstantPairScorer(), sels, n_boot=0, num_workers=0)
    assert all(r.accuracy == 0.0 for r in const.record.results)
    assert all(r.ties == r.n for r in const.record.results if not r.subset.startswith("_"))
    lenient = evaluate(ConstantPairScorer(), sels, n_boot=0, num_workers=0, tie_policy="lenient")
    assert all(r.accuracy == 100.0 for r in lenient.record.results)


def test_missing_image_names_item_or_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    (images / "2.jpg").unlink()  # swap_obj item 2 loses its image
    with pytest.raises(DataError, match=r"2\.jpg"):
        evaluate(
            TinyDualEncoder(),
            ["fixture_pp"],
            tasks=["itt"],
            data_dir=data,
            coco_val2017=images,
            n_boot=0,
            num_workers=0,
        )
    out = tmp_path / "run"
    run = evaluate(
        TinyDualEncoder(),
        ["fixture_pp"],
        tasks=["itt"],
        data_dir=data,
        coco_val2017=images,
        n_boot=0,
        num_workers=0,
        skip_bad_images=True,
        out=out,
    )
    info = run.record.benchmarks[0]
    assert info.skipped == {"swap_obj": ["2"]}
    assert run.record.result("fixture_pp", "itt", "swap_obj").n == 2
    assert run.record.timings.n_images_skipped == 1
    assert json.loads((out / "run.json").read_text())["config"]["images"]["on_error"] == "skip"


def test_text_and_image_tasks_share_one_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    enc = TinyDualEncoder()
    run = evaluate(enc, ["fixture_pp"], data_dir=data, coco_val2017=images, n_boot=0, num_workers=0)
    metrics = {r.metric for r in run.record.results}
    assert {"tot", "itt", "itt_p1n", "itt_p2n"} <= metrics
    # texts encoded once even though both tasks use them
    assert len(enc.encoded) == len(set(enc.encoded))
    assert run.accuracy("fixture_pp", "itt", MICRO) >= 0.0

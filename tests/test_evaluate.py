"""End to end through the Python API with a deterministic test encoder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from builders.fakes import TRIPLETS, BagOfWordsEncoder, cosine, register_fixture_benchmark
from lexsem import evaluate
from lexsem.config import EvalConfig
from lexsem.errors import LexsemError
from lexsem.results.run import Run
from lexsem.results.run_folder import load_run
from lexsem.stats.bootstrap import MACRO, MICRO


def _expected_tot(enc: BagOfWordsEncoder) -> dict[str, list[bool]]:
    out = {}
    for sub, rows in TRIPLETS.items():
        hits = []
        for p1, p2, n in rows:
            v1, v2, vn = enc.vector(p1), enc.vector(p2), enc.vector(n)
            s12, s1n, s2n = cosine(v1, v2), cosine(v1, vn), cosine(v2, vn)
            hits.append(s12 > s1n and s12 > s2n)
        out[sub] = hits
    return out


def test_hits_match_direct_computation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    enc = BagOfWordsEncoder()
    run = evaluate(enc, ["fixture_pp"], data_dir=data, out=tmp_path / "run", n_boot=200)
    expected = _expected_tot(enc)
    table = run.items.to_pylist()
    for sub, hits in expected.items():
        got = [r["hit"] for r in table if r["subset"] == sub]
        assert got == hits, sub
        assert run.accuracy("fixture_pp", "tot", sub) == pytest.approx(100 * np.mean(hits))
    all_hits = [h for hs in expected.values() for h in hs]
    assert run.accuracy("fixture_pp", "tot", MICRO) == pytest.approx(100 * np.mean(all_hits))
    assert run.accuracy("fixture_pp", "tot", MACRO) == pytest.approx(
        100 * np.mean([np.mean(h) for h in expected.values()])
    )


def test_each_unique_text_encoded_once_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    enc = BagOfWordsEncoder()
    first = evaluate(enc, ["fixture_pp"], data_dir=data, n_boot=0)
    unique = {t for rows in TRIPLETS.values() for tr in rows for t in tr}
    assert sorted(enc.encoded) == sorted(unique)
    assert first.record.timings.n_texts_encoded == len(unique)

    enc2 = BagOfWordsEncoder()
    second = evaluate(enc2, ["fixture_pp"], data_dir=data, n_boot=0)
    assert enc2.calls == 0, "a warm run must not call the encoder"
    assert second.record.timings.n_texts_cached == len(unique)
    assert [r.model_dump() for r in second.record.results] == [
        r.model_dump() for r in first.record.results
    ]


def test_no_cache_option_encodes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    evaluate(BagOfWordsEncoder(), ["fixture_pp"], data_dir=data, n_boot=0)
    enc = BagOfWordsEncoder()
    evaluate(enc, ["fixture_pp"], data_dir=data, n_boot=0, use_cache=False)
    assert enc.calls == 1


def test_run_files_and_reproducibility(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, spec = register_fixture_benchmark(tmp_path, monkeypatch)
    out = tmp_path / "run"
    run = evaluate(
        BagOfWordsEncoder(),
        ["fixture_pp/swap_obj"],
        data_dir=data,
        out=out,
        seed=5,
        n_boot=300,
        tie_policy="strict",
    )
    raw = json.loads((out / "run.json").read_text())
    assert raw["schema_version"] == 1
    assert raw["lexsem_version"]
    evaluation = raw["config"].pop("evaluation")
    assert raw["config"] == {
        "tasks": ["tot"],
        "images": {},
        "tie_policy": "strict",
        "seed": 5,
        "n_boot": 300,
        "confidence": 0.95,
    }
    # the full settings, as given: they rebuild the same evaluation
    # (`evaluate` runs once, so it keeps no decoded images: keep_decoded_mb=0)
    assert EvalConfig(**evaluation) == EvalConfig(
        benchmarks=["fixture_pp/swap_obj"], data_dir=data, seed=5, n_boot=300, keep_decoded_mb=0
    )
    assert raw["benchmarks"][0]["files"][0]["sha256"] == spec.subset("swap_obj").source.sha256
    assert raw["benchmarks"][0]["subsets"] == ["swap_obj"]
    assert raw["model"]["fingerprint"] == {"backend": "test-bow", "dim": 64}
    table = pq.read_table(out / "items.parquet")
    assert table.num_rows == len(TRIPLETS["swap_obj"])
    assert {"s_p1_p2", "s_p1_n", "s_p2_n", "hit", "tie", "item_id"} <= set(table.column_names)
    loaded = Run.load(out)
    assert loaded.record == run.record
    again = evaluate(
        BagOfWordsEncoder(), ["fixture_pp/swap_obj"], data_dir=data, seed=5, n_boot=300
    )
    assert [r.model_dump() for r in again.record.results] == raw["results"]
    assert again.record.run_id == run.record.run_id


def test_schema_version_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    out = tmp_path / "run"
    evaluate(BagOfWordsEncoder(), ["fixture_pp"], data_dir=data, out=out, n_boot=0)
    raw = json.loads((out / "run.json").read_text())
    raw["schema_version"] = 99
    (out / "run.json").write_text(json.dumps(raw))
    with pytest.raises(LexsemError, match="schema version 99"):
        load_run(out)


def test_failed_write_leaves_no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    import lexsem.results.run_folder as store

    def boom(*a: object, **k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store.pq, "write_table", boom)
    out = tmp_path / "run"
    with pytest.raises(OSError):
        evaluate(BagOfWordsEncoder(), ["fixture_pp"], data_dir=data, out=out, n_boot=0)
    assert not (out / "run.json").exists()
    assert list(out.glob("*")) == []


def test_text_encoder_on_pair_benchmark_is_refused(test_data_dir: Path) -> None:
    with pytest.raises(LexsemError, match="no text-only task"):
        evaluate(BagOfWordsEncoder(), ["sugarcrepe/swap_obj"], data_dir=test_data_dir)


def test_unknown_task_and_duplicates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    with pytest.raises(LexsemError, match="does not support task 'bivlc'"):
        evaluate(BagOfWordsEncoder(), ["fixture_pp"], data_dir=data, tasks=["bivlc"])
    with pytest.raises(LexsemError, match="this model cannot run task 'itt'") as exc:
        evaluate(BagOfWordsEncoder(), ["fixture_pp"], data_dir=data, tasks=["itt"])
    assert "needs an image encoder (the ImageEncoder protocol" in str(exc.value)
    assert "it can run tot" in str(exc.value)
    with pytest.raises(LexsemError, match="given more than once"):
        evaluate(
            BagOfWordsEncoder(), ["fixture_pp/swap_obj", "fixture_pp/replace_att"], data_dir=data
        )
    with pytest.raises(LexsemError, match="no subset 'nope'"):
        evaluate(BagOfWordsEncoder(), ["fixture_pp/nope"], data_dir=data)
    with pytest.raises(LexsemError, match="unknown benchmark"):
        evaluate(BagOfWordsEncoder(), ["nope"], data_dir=data)


def test_synthetic_with_t2t_synonym() -> None:
    run = evaluate(BagOfWordsEncoder(), ["synthetic"], tasks=["t2t"], n_boot=0)
    assert run.record.config.tasks == ["tot"]
    assert {r.subset for r in run.record.results} >= {"swap_att", MICRO, MACRO}


def test_single_subset_run_answers_for_its_aggregate() -> None:
    run = evaluate(BagOfWordsEncoder(), ["synthetic/swap_att"], n_boot=0)
    assert {r.subset for r in run.record.results} == {"swap_att"}  # no aggregates of one subset
    one = run.accuracy("synthetic", "tot", "swap_att")
    assert run.accuracy("synthetic", "tot") == one == run.accuracy("synthetic", "tot", MACRO)
    with pytest.raises(KeyError, match="no result for synthetic/swap_obj"):
        run.accuracy("synthetic", "tot", "swap_obj")


class HalfAnEncoder:
    """A user's model that forgot `fingerprint` (and has no image side)."""

    name = "mine"

    def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)


class EncodeWithoutBatchSize:
    name = "mine"
    fingerprint = {"backend": "mine"}  # noqa: RUF012

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)


def test_a_custom_model_is_told_which_protocol_members_it_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    with pytest.raises(LexsemError) as exc:
        evaluate(HalfAnEncoder(), ["fixture_pp"], data_dir=data, n_boot=0)
    msg = str(exc.value)
    assert msg.startswith("HalfAnEncoder implements none of the model protocols")
    assert "TextEncoder needs fingerprint;" in msg  # the closest protocol first
    assert "ImageEncoder needs fingerprint, preprocess, encode_images" in msg


def test_an_encode_without_batch_size_is_a_clear_error_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    with pytest.raises(LexsemError, match=r"EncodeWithoutBatchSize\.encode\(texts"):
        evaluate(EncodeWithoutBatchSize(), ["fixture_pp"], data_dir=data, n_boot=0)


class EncodeWithKeywords(EncodeWithoutBatchSize):
    def encode(self, texts: list[str], **options: object) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)


def test_an_encode_taking_any_keyword_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    run = evaluate(EncodeWithKeywords(), ["fixture_pp"], data_dir=data, n_boot=0, use_cache=False)
    assert run.record.results

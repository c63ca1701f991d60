"""Bootstrap intervals are stored and read back (`lexsem.stats.bootstrap.ci_memo`): a rerun
gives the same intervals bit for bit without resampling, and anything an interval depends on
changes its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders.fakes import BagOfWordsEncoder
from lexsem.config import EvalConfig
from lexsem.engine.request_store import RequestStore
from lexsem.evaluator import CI_STORE, Evaluator
from lexsem.stats import bootstrap as B
from lexsem.stats.ties import Hits


def _count(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = B._bootstrap

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(B, "_bootstrap", counted)
    return calls


def _hits(seed: int, sizes: tuple[int, ...] = (30, 17)) -> dict[str, Hits]:
    rng = np.random.default_rng(seed)
    return {f"s{i}": Hits(rng.random(n) < 0.6, np.zeros(n, bool)) for i, n in enumerate(sizes)}


def test_stored_intervals_are_read_back_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count(monkeypatch)
    plain = B.summarize(_hits(0), n_boot=300, seed=4)
    n_intervals = len(calls)
    assert n_intervals == 4  # two subsets, micro, macro
    with RequestStore(tmp_path, "ci") as store:
        with B.ci_memo(store):
            first = B.summarize(_hits(0), n_boot=300, seed=4)
        assert store.count("records") == 4
        with B.ci_memo(store):
            again = B.summarize(_hits(0), n_boot=300, seed=4)
    assert first == plain == again  # the dataclasses compare every float exactly
    assert len(calls) == 2 * n_intervals  # the third summary resampled nothing


@pytest.mark.parametrize(
    "change",
    [
        {"n_boot": 301},
        {"seed": 5},
        {"confidence": 0.9},
        {"hits": 1},  # other hit vectors
    ],
)
def test_anything_an_interval_depends_on_changes_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    base = {"n_boot": 300, "seed": 4, "confidence": 0.95}
    with RequestStore(tmp_path, "ci") as store, B.ci_memo(store):
        B.summarize(_hits(0), **base)
        calls = _count(monkeypatch)
        args = {**base, **{k: v for k, v in change.items() if k != "hits"}}
        got = B.summarize(_hits(change.get("hits", 0)), **args)
    assert len(calls) == 4  # nothing served from the other intervals' entries
    monkeypatch.undo()
    assert got == B.summarize(_hits(change.get("hits", 0)), **args)


def test_micro_and_macro_of_the_same_hits_have_different_keys() -> None:
    x = [np.ones(5), np.zeros(7)]
    assert B.ci_key(x, B.micro_mean, 100, 0, 0.95) != B.ci_key(x, B.macro_mean, 100, 0, 0.95)
    # the split into subsets matters, not only the concatenated bytes
    y = [np.ones(5), np.zeros(7)]
    z = [np.ones(4), np.concatenate([[1.0], np.zeros(7)])]
    assert B.ci_key(y, B.micro_mean, 100, 0, 0.95) != B.ci_key(z, B.micro_mean, 100, 0, 0.95)


def test_a_rerun_of_the_evaluator_reads_its_intervals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = EvalConfig(benchmarks=["synthetic/swap_att,swap_obj"], n_boot=200, cache_dir=tmp_path)
    calls = _count(monkeypatch)
    first = Evaluator(cfg).run(BagOfWordsEncoder())
    computed = len(calls)
    assert computed > 0
    n_before = len(calls)
    third = Evaluator(cfg).run(BagOfWordsEncoder())
    assert len(calls) == n_before == computed  # every interval of these hits is stored
    assert [r.model_dump() for r in third.record.results] == [
        r.model_dump() for r in first.record.results
    ]
    assert [(r.ci_low, r.ci_high) for r in first.record.results] == [
        (r.ci_low, r.ci_high) for r in third.record.results
    ]
    assert (tmp_path / "embeddings" / f"{CI_STORE}.sqlite").exists()
    # without the cache nothing is stored or read
    nocache = Evaluator(cfg.model_copy(update={"use_cache": False})).run(BagOfWordsEncoder())
    assert len(calls) == n_before + computed
    assert [(r.ci_low, r.ci_high) for r in nocache.record.results] == [
        (r.ci_low, r.ci_high) for r in first.record.results
    ]


def test_a_read_only_store_serves_intervals_and_stores_none(tmp_path: Path) -> None:
    with RequestStore(tmp_path, "ci") as store, B.ci_memo(store):
        B.summarize(_hits(0), n_boot=100, seed=1)
    with RequestStore(tmp_path, "ci", readonly=True) as ro, B.ci_memo(ro):
        again = B.summarize(_hits(0), n_boot=100, seed=1)  # served
        other = B.summarize(_hits(2), n_boot=100, seed=1)  # computed, not stored, no error
    assert again == B.summarize(_hits(0), n_boot=100, seed=1)
    assert other == B.summarize(_hits(2), n_boot=100, seed=1)

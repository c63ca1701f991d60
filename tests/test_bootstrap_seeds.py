"""Bootstrap seeds come from names (`lexsem.stats.seeds`): a benchmark's confidence intervals
are the same whatever else is selected, in whichever order, and a subset's interval the same
whichever other subsets are selected with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders.fakes import BagOfWordsEncoder, register_fixture_benchmark
from lexsem.config import EvalConfig
from lexsem.evaluator import Evaluator
from lexsem.stats.seeds import bootstrap_seed

A = "synthetic/swap_att,swap_obj"


def _rows(run: object, benchmark: str) -> dict[tuple[str, str, str], tuple[float, ...]]:
    rows = {
        (r.task, r.metric, r.subset): (r.accuracy, r.ci_low, r.ci_high)
        for r in run.record.results  # type: ignore[attr-defined]
        if r.benchmark == benchmark
    }
    assert rows and all(ci is not None for _, *cis in rows.values() for ci in cis)
    return rows


def test_a_benchmark_gets_the_same_intervals_whatever_else_is_selected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, other = register_fixture_benchmark(tmp_path, monkeypatch)
    base = EvalConfig(benchmarks=[A], n_boot=200, seed=3, use_cache=False)
    alone = Evaluator(base).run(BagOfWordsEncoder())
    second = Evaluator(
        base.model_copy(update={"benchmarks": (other.name, A), "data_dir": data})
    ).run(BagOfWordsEncoder())
    assert _rows(second, "synthetic") == _rows(alone, "synthetic")
    # the other benchmark is really there, with intervals of its own
    assert _rows(second, other.name)


def test_a_subset_gets_the_same_interval_whichever_subsets_come_with_it() -> None:
    one = Evaluator(EvalConfig(benchmarks=["synthetic/swap_obj"], n_boot=200, use_cache=False))
    two = Evaluator(EvalConfig(benchmarks=[A], n_boot=200, use_cache=False))
    got_one = _rows(one.run(BagOfWordsEncoder()), "synthetic")
    got_two = _rows(two.run(BagOfWordsEncoder()), "synthetic")
    shared = [k for k in got_one if k[2] == "swap_obj"]
    assert shared and all(got_one[k] == got_two[k] for k in shared)


def test_seeds_differ_by_name_and_ignore_python_hash_salting() -> None:
    names = [("a", "tot", "tot"), ("b", "tot", "tot"), ("a", "itt", "tot"), ("a", "tot", "x")]
    seeds = {bootstrap_seed(0, *n) for n in names} | {bootstrap_seed(1, *names[0])}
    assert len(seeds) == len(names) + 1
    assert bootstrap_seed(0, "ab", "c") != bootstrap_seed(0, "a", "bc")  # names are delimited
    code = "from lexsem.stats.seeds import bootstrap_seed; print(bootstrap_seed(7, 'x', 'y'))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": salt},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for salt in ("1", "2")
    }
    assert outs == {str(bootstrap_seed(7, "x", "y"))}

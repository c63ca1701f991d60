"""Humans and models on the same items (`lexsem.analysis.same_items`,
`lexsem.report.same_items`) and the Wilson interval of a small sample (`lexsem.stats.wilson`),
against counts and intervals worked out by hand."""

from __future__ import annotations

import math

import pytest

from builders.run_records import items_run
from lexsem.analysis.same_items import on_reference_items
from lexsem.report.same_items import same_items_tables
from lexsem.report.tables import to_markdown
from lexsem.stats.bootstrap import MACRO, MICRO, summarize, wilson_intervals
from lexsem.stats.ties import Hits
from lexsem.stats.wilson import wilson_interval

Z95 = 1.959963984540054  # the 97.5% normal quantile


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927), written out: (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p, z2 = k / n, Z95**2
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return 100 * (centre - half), 100 * (centre + half)


def test_wilson_interval_of_four_of_four_is_not_a_point() -> None:
    lo, hi = wilson_interval(4, 4)
    assert (lo, hi) == pytest.approx(_wilson(4, 4), abs=1e-9)
    assert lo == pytest.approx(51.0109, abs=1e-4) and hi == pytest.approx(100.0)
    assert wilson_interval(0, 0) is None
    assert wilson_interval(5, 6) == pytest.approx(_wilson(5, 6), abs=1e-9)
    with pytest.raises(ValueError, match="0 <= hits <= n"):
        wilson_interval(5, 4)


def test_summarize_gives_proportions_wilson_and_the_macro_none_inside_the_block() -> None:
    import numpy as np

    by = {
        "a": Hits(np.ones(4, dtype=bool), np.zeros(4, dtype=bool)),
        "b": Hits(np.array([True, True, False]), np.zeros(3, dtype=bool)),
    }
    plain = {r.subset: r for r in summarize(by, n_boot=200, seed=0)}
    assert (plain["a"].ci_low, plain["a"].ci_high) == (100.0, 100.0)  # the degenerate bootstrap
    with wilson_intervals():
        rows = {r.subset: r for r in summarize(by, n_boot=200, seed=0)}
    assert (rows["a"].ci_low, rows["a"].ci_high) == pytest.approx(_wilson(4, 4))
    assert (rows["b"].ci_low, rows["b"].ci_high) == pytest.approx(_wilson(2, 3))
    assert (rows[MICRO].ci_low, rows[MICRO].ci_high) == pytest.approx(_wilson(6, 7))
    assert (rows[MACRO].ci_low, rows[MACRO].ci_high) == (None, None)
    again = {r.subset: r for r in summarize(by, n_boot=200, seed=0)}
    assert again["a"].ci_low == plain["a"].ci_low  # outside the block: the bootstrap again


# the human study answered 3 items of each subset; the models every one of the 20 items
HUMAN = {("swap", "0"): True, ("swap", "1"): True, ("swap", "2"): True,
         ("repl", "0"): True, ("repl", "1"): True, ("repl", "2"): False}  # fmt: skip
ON_HUMAN_A = {("swap", "0"): True, ("swap", "1"): False, ("swap", "2"): False,
              ("repl", "0"): True, ("repl", "1"): True, ("repl", "2"): True}  # fmt: skip


def _model(on_human: dict[tuple[str, str], bool], rest: bool) -> dict[tuple[str, str], bool]:
    return {
        (s, str(i)): on_human.get((s, str(i)), rest) for s in ("swap", "repl") for i in range(10)
    }


def _runs():  # type: ignore[no-untyped-def]
    human = items_run("human", HUMAN, backend="human")
    a = items_run("a", _model(ON_HUMAN_A, rest=False))  # 4/20 overall, 4/6 on the human items
    b = items_run("b", _model(dict.fromkeys(HUMAN, False), rest=True))  # 14/20, 0/6
    return human, a, b


def test_models_on_the_items_the_humans_answered() -> None:
    human, a, b = _runs()
    rows, skipped = on_reference_items(human, [human, a, b])
    assert skipped == []
    got = {(r.model_run, r.subset): r for r in rows}
    assert sorted(got) == sorted(
        (m, s) for m in ("a-run", "b-run") for s in ("swap", "repl", MICRO)
    )
    # (n, human hits, model hits, human only, model only, exact McNemar p), by hand:
    # p = 2 · P(Binomial(b + c, ½) ≤ min(b, c)), capped at 1
    want = {
        ("a-run", MICRO): (6, 5, 4, 2, 1, 1.0),
        ("a-run", "swap"): (3, 3, 1, 2, 0, 0.5),
        ("a-run", "repl"): (3, 2, 3, 0, 1, 1.0),
        ("b-run", MICRO): (6, 5, 0, 5, 0, 0.0625),
        ("b-run", "swap"): (3, 3, 0, 3, 0, 0.25),
        ("b-run", "repl"): (3, 2, 0, 2, 0, 0.5),
    }
    for key, (n, hh, mh, only_h, only_m, p) in want.items():
        r = got[key]
        assert (r.n, r.reference_hits, r.model_hits) == (n, hh, mh), key
        assert (r.reference_only, r.model_only) == (only_h, only_m), key
        assert r.p_value == pytest.approx(p), key
        assert r.reference_interval == pytest.approx(_wilson(hh, n)), key
        assert r.model_interval == pytest.approx(_wilson(mh, n)), key
    assert got[("a-run", MICRO)].model_accuracy == pytest.approx(100 * 4 / 6)
    assert a.accuracy("bench", "tot") == pytest.approx(20.0)  # not what the table shows


def test_a_model_lacking_a_human_item_is_named_not_paired() -> None:
    human, a, _ = _runs()
    short = items_run("short", {k: v for k, v in _model(ON_HUMAN_A, False).items()
                                if k != ("repl", "2")})  # fmt: skip
    rows, skipped = on_reference_items(human, [a, short])
    assert {r.model_run for r in rows} == {"a-run"}
    assert len(skipped) == 1 and "short" in skipped[0] and "repl#2" in skipped[0]


def test_the_report_table_shows_each_model_on_the_human_items() -> None:
    human, a, b = _runs()
    (table,) = same_items_tables([human, a, b])
    text = to_markdown([table])
    lo, hi = _wilson(5, 6)
    assert f"| human | micro | 6 | 83.33 | [{lo:.1f}, {hi:.1f}] |  |  |  |" in text
    lo, hi = _wilson(4, 6)
    assert f"| a | micro | 6 | 66.67 | [{lo:.1f}, {hi:.1f}] | 2 | 1 | 1 |" in text
    assert "| b | micro | 6 | 0.00 | [0.0, 39.0] | 5 | 0 | 0.0625 |" in text
    assert same_items_tables([a, b]) == []  # no human run: no such table

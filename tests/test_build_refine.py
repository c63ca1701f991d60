"""SugarCrepe's adversarial refinement (`lexsem.construct.refine`) keeps the reference's items.

Oracles: RAIVNLab/sugar-crepe's own `adversarial_refine.py`, run in a subprocess from a copy
written to a temporary folder (where a checkout is present: `builders.references`), and
`_reference_keep` below, the same procedure transcribed line by line from that script, which
the tests run in CI."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from builders.references import SUGARCREPE, reference_file
from lexsem.construct.refine import REASON, adversarial_refine, refine_keep
from lexsem.errors import DataError

CATEGORIES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att",
              "swap_obj")  # fmt: skip


def _reference_keep(gap1: list[float], gap2: list[float], seed: int) -> list[int]:
    """sugar-crepe `adversarial_refine.py` transcribed, after `np.random.seed(seed)`."""
    np.random.seed(seed)
    n_grids = 50
    keep: list[int] = []
    score_to_idx: dict[tuple[int, int], list[int]] = {}
    for i in range(1, n_grids + 1):
        for j in range(1, n_grids + 1):
            for key in ((i, j), (-i, -j), (i, -j), (-i, j)):
                score_to_idx[key] = []
    model1_zero_idx, model2_zero_idx = [], []
    for i, (g1, g2) in enumerate(zip(gap1, gap2, strict=False)):
        if g1 == 0 and g2 == 0:
            keep.append(i)
            continue
        if g1 == 0:
            model1_zero_idx.append(i)
            continue
        if g2 == 0:
            model2_zero_idx.append(i)
            continue
        id1, id2 = int(abs(g1) * n_grids) + 1, int(abs(g2) * n_grids) + 1
        score_to_idx[(id1 if g1 > 0 else -id1, id2 if g2 > 0 else -id2)].append(i)

    def take(idx: list[int], op_idx: list[int]) -> None:
        if len(idx) > len(op_idx):
            keep.extend(op_idx)
            keep.extend(list(np.random.choice(idx, len(op_idx), replace=False)))
        else:
            keep.extend(idx)
            keep.extend(list(np.random.choice(op_idx, len(idx), replace=False)))

    for i in range(1, n_grids + 1):
        for j in range(1, n_grids + 1):
            for idx, op_idx in ((score_to_idx[(i, j)], score_to_idx[(-i, -j)]),
                                (score_to_idx[(i, -j)], score_to_idx[(-i, j)])):  # fmt: skip
                if len(idx) > 0 and len(op_idx) > 0:
                    take(idx, op_idx)
    n_grids = 10
    for zero_idx, other in ((model1_zero_idx, gap2), (model2_zero_idx, gap1)):
        if len(zero_idx) > 0:
            pos = {i: [] for i in range(n_grids)}
            neg = {i: [] for i in range(n_grids)}
            for i in zero_idx:
                gap = other[i]
                if gap > 0:
                    pos[int(gap * n_grids)].append(i)
                else:
                    neg[int(-gap * n_grids)].append(i)
            for i in range(n_grids):
                take(pos[i], neg[i])
    return [int(i) for i in keep]


def _synthetic_gaps(n: int, seed: int) -> tuple[list[float], list[float]]:
    """Seeded gaps in [-1, 1] that reach every branch: zeros of either or both scorers, values
    on bin edges (multiples of 1/50 and 1/10) and dense cells, so that draws happen."""
    rng = np.random.default_rng(seed)
    gaps = []
    for _ in range(2):
        g = rng.uniform(-1, 1, n)
        g = np.where(rng.random(n) < 0.5, np.round(g * 49) / 50, g * 0.3)  # edges below 1
        g[rng.random(n) < 0.12] = 0.0
        gaps.append(g)
    both = rng.random(n) < 0.03
    gaps[0][both] = 0.0
    gaps[1][both] = 0.0
    return [float(x) for x in gaps[0]], [float(x) for x in gaps[1]]


def _unrefined_rows(data: Path, seed: int) -> pa.Table:
    """The real unrefined SugarCrepe items, one row each, with synthetic seeded score gaps."""
    rows: dict[str, list[object]] = {k: [] for k in ("source", "source_id", "category",
                                                     "caption", "negative_caption")}  # fmt: skip
    gap1: list[float] = []
    gap2: list[float] = []
    for number, category in enumerate(CATEGORIES):
        items = json.loads((data / "sugarcrepe_unrefined" / f"{category}.json").read_text())
        g1, g2 = _synthetic_gaps(len(items), seed * 100 + number)
        gap1 += g1
        gap2 += g2
        for key, item in items.items():
            rows["source"].append("sugarcrepe_unrefined")
            rows["source_id"].append(f"{category}/{key}")
            rows["category"].append(category)
            rows["caption"].append(item["caption"])
            rows["negative_caption"].append(item["negative_caption"])
    return pa.table({**rows, "vera_gap": gap1, "cola_gap": gap2})


def _kept_by_category(table: pa.Table) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in table.to_pylist():
        if row["rejected"] is None:
            out.setdefault(row["category"], set()).add(row["source_id"])
    return out


def _oracle_by_category(rows: pa.Table, seed: int, keep_fn) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for category in CATEGORIES:
        part = rows.filter(pc.equal(rows.column("category"), category)).to_pylist()
        kept = keep_fn([r["vera_gap"] for r in part], [r["cola_gap"] for r in part], seed)
        out[category] = {part[i]["source_id"] for i in kept}
    return out


@pytest.mark.data
@pytest.mark.parametrize("seed", [0, 7])
def test_keeps_the_transcribed_reference_items_on_unrefined_sugarcrepe(
    test_data_dir: Path, seed: int
) -> None:
    rows = _unrefined_rows(test_data_dir, seed)
    refined = adversarial_refine(rows, None, seed=seed, group_by="category", order="input")
    assert refined.num_rows == rows.num_rows
    assert refined.drop_columns(["rejected"]).equals(rows)
    kept = _kept_by_category(refined)
    assert kept == _oracle_by_category(rows, seed, _reference_keep)
    assert 0 < sum(map(len, kept.values())) < rows.num_rows
    assert set(refined.column("rejected").drop_null().to_pylist()) == {REASON}


def _reference_script(tmp_path: Path) -> Path:
    """A copy of sugar-crepe's adversarial_refine.py in tmp_path, from its checkout
    (`builders.references`; skips without one: `_reference_keep` is its twin)."""
    (tmp_path / "adversarial_refine.py").write_text(
        reference_file(SUGARCREPE, "adversarial_refine.py")
    )
    return tmp_path


def _run_reference(folder: Path, cases: list[tuple[list[float], list[float], int]]) -> list:
    """Each case's keep list from the reference script, or the name of what it raised."""
    (folder / "cases.json").write_text(json.dumps(cases))
    program = (
        "import json, sys\n"
        "import numpy as np\n"
        "import adversarial_refine as ref\n"  # its module level runs a demo on 1000 items
        "out = []\n"
        "for g1, g2, seed in json.load(open('cases.json')):\n"
        "    np.random.seed(seed)\n"
        "    try:\n"
        "        out.append([int(i) for i in ref.adversarial_refine(np.array(g1), np.array(g2))])\n"
        "    except Exception as e:\n"
        "        out.append(type(e).__name__)\n"
        "json.dump(out, open('out.json', 'w'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=folder, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((folder / "out.json").read_text())


@pytest.mark.data
def test_keeps_what_the_reference_script_keeps(test_data_dir: Path, tmp_path: Path) -> None:
    """Same gaps, same seed: the same kept items, drawn in the same order, as the script."""
    folder = _reference_script(tmp_path)
    rows = _unrefined_rows(test_data_dir, 3)
    cases = []
    for category in ("add_att", "replace_rel", "swap_obj"):
        part = rows.filter(pc.equal(rows.column("category"), category))
        g1, g2 = part.column("vera_gap").to_pylist(), part.column("cola_gap").to_pylist()
        cases += [(g1, g2, 0), (g1, g2, 12345)]
    for (g1, g2, seed), expected in zip(cases, _run_reference(folder, cases), strict=True):
        assert refine_keep(g1, g2, np.random.RandomState(seed)) == expected
        assert _reference_keep(g1, g2, seed) == expected


def _with_unit_gaps() -> tuple[list[float], list[float]]:
    """Synthetic gaps with +1 and -1 on both scorers, on the grid and beside a 0 gap."""
    g1, g2 = _synthetic_gaps(400, 11)
    for i, (a, b) in enumerate([(1.0, 0.3), (-1.0, -0.3), (1.0, -1.0), (-1.0, 1.0), (0.5, 1.0),
                                (-0.5, -1.0), (0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0),
                                (1.0, 1.0), (-1.0, -1.0)]):  # fmt: skip
        g1[i], g2[i] = a, b
    return g1, g2


def _just_below_one(gaps: list[float]) -> list[float]:
    """±1 moved to ±0.999: the same outermost bin (int(0.999*50)+1 = 50, int(0.999*10) = 9)."""
    return [math.copysign(0.999, g) if abs(g) == 1 else g for g in gaps]


def test_a_gap_of_exactly_one_falls_in_the_outermost_bin() -> None:
    """The reference has no cell for |gap| = 1; lexsem keeps what it keeps for ±0.999."""
    g1, g2 = _with_unit_gaps()
    for seed in (0, 5):
        expected = _reference_keep(_just_below_one(g1), _just_below_one(g2), seed)
        assert refine_keep(g1, g2, np.random.RandomState(seed)) == expected
    with pytest.raises(KeyError):
        _reference_keep(g1, g2, 0)


def test_the_reference_script_fails_on_a_gap_of_exactly_one(tmp_path: Path) -> None:
    """The evidence for docs/fidelity.md: KeyError on the grid and in the one-gap balancing."""
    folder = _reference_script(tmp_path)
    g1, g2 = _with_unit_gaps()
    cases = [
        ([1.0, -0.5], [0.3, -0.3], 0),  # the two-gap grid: cell 51
        ([0.0, 0.0], [-1.0, 0.4], 0),  # one gap 0: bin 10 of 0..9
        ([0.999, -0.5], [0.3, -0.3], 0),  # just below 1: runs
        (_just_below_one(g1), _just_below_one(g2), 4),
    ]
    out = _run_reference(folder, cases)
    assert out[:2] == ["KeyError", "KeyError"]
    assert out[2] == refine_keep(*cases[2][:2], np.random.RandomState(0))
    assert out[3] == refine_keep(g1, g2, np.random.RandomState(4))


def test_kept_items_are_balanced_in_sign_for_each_scorer() -> None:
    """Neither scorer can tell positives from negatives among the kept items."""
    g1, g2 = _synthetic_gaps(2000, 1)
    kept = refine_keep(g1, g2, np.random.RandomState(0))
    assert len(set(kept)) == len(kept)
    for gaps in (g1, g2):
        assert sum(gaps[i] > 0 for i in kept) == sum(gaps[i] < 0 for i in kept) > 0


def _small_table(**overrides: list[object]) -> pa.Table:
    columns: dict[str, list[object]] = {
        "source": ["s"] * 6,
        "source_id": [f"id{i}" for i in range(6)],
        "vera_gap": [0.5, -0.5, 0.51, 0.0, 0.2, -0.2],
        "cola_gap": [0.1, -0.1, 0.1, 0.0, 0.3, -0.3],
        "rejected": [None, None, None, None, "too_long", None],
    }
    columns.update(overrides)
    return pa.table(columns)


def test_rejected_rows_pass_through_and_take_no_part() -> None:
    table = adversarial_refine(_small_table(), None, seed=0, order="input")
    out = table.column("rejected").to_pylist()
    # id4 was rejected before, so id5 has no mirror; id3 (both gaps 0) is always kept; one of
    # id0/id2 (same cell) is drawn against id1.
    assert out[3] is None and out[1] is None
    assert out[4] == "too_long" and out[5] == REASON
    assert sorted([out[0], out[2]], key=str) == [None, REASON]


@pytest.mark.parametrize(
    ("gap", "shown"),
    [(float("nan"), "nan"), (1.5, "1.5"), (None, "None"), (-1.0000001, "-1.0000001")],
)
def test_a_bad_gap_names_the_item(gap: object, shown: str) -> None:
    table = _small_table(cola_gap=[0.1, -0.1, gap, 0.0, 0.3, -0.3])
    with pytest.raises(DataError, match=rf"item id2: score gap cola_gap={shown} is not a number"):
        adversarial_refine(table, None)


def test_a_missing_gap_column_is_named() -> None:
    with pytest.raises(DataError, match="score-gap column 'plaus'"):
        adversarial_refine(_small_table(), None, model1_gap="plaus")


def test_a_recipe_refines_through_lexsem_build(tmp_path: Path) -> None:
    """A recipe whose input holds the two gap columns, run by the CLI: the rows kept are those
    `refine_keep` keeps per category with the recipe's seed; the others are rejected by name."""
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from lexsem.cli import app
    from lexsem.construct.refine import refine_keep

    rng = np.random.default_rng(7)
    rows = [{"id": i, "category": ("a", "b")[i % 2],
             "vera_gap": float(rng.choice([-0.5, -0.3, -0.1, 0.1, 0.3, 0.5])),
             "cola_gap": float(rng.choice([-0.5, -0.1, 0.1, 0.5]))}
            for i in range(120)]  # fmt: skip
    data = tmp_path / "gaps.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    recipe = tmp_path / "refine.toml"
    recipe.write_text(
        'name = "refine"\nseed = 3\n[input]\npath = "gaps.jsonl"\n[[stages]]\n'
        'use = "adversarial_refine"\n[stages.settings]\nseed = 3\ngroup_by = "category"\n',
        encoding="utf-8",
    )
    out = tmp_path / "built"
    res = CliRunner().invoke(app, ["build", str(recipe), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    (stage,) = sorted((out / "stages").glob("*.parquet"))
    got = pq.read_table(stage).to_pylist()
    kept = {r["id"] for r in got if r["rejected"] is None}
    want: set[int] = set()
    for cat in ("a", "b"):
        group = [r for r in rows if r["category"] == cat]
        picks = refine_keep([r["vera_gap"] for r in group], [r["cola_gap"] for r in group],
                            np.random.RandomState(3))  # fmt: skip
        want |= {group[k]["id"] for k in picks}
    assert kept == want and 0 < len(kept) < len(rows)
    assert {r["rejected"] for r in got if r["id"] not in kept} == {"adversarial_refinement"}


def test_kept_rows_come_in_the_refinements_order() -> None:
    """BiVLC's TROHN_Img_best_selection.py takes ``data.iloc[keep]``: the rows the refinement
    keeps, in the order it keeps them. Re-done here from that line: the kept positions of
    `refine_keep` on the live rows, mapped to rows, then every other row in input order."""
    table = _small_table()
    out = adversarial_refine(table, None, seed=0)
    live = [0, 1, 2, 3, 5]  # id4 was rejected before
    gaps1 = [table["vera_gap"][i].as_py() for i in live]
    gaps2 = [table["cola_gap"][i].as_py() for i in live]
    keep = [live[k] for k in refine_keep(gaps1, gaps2, np.random.RandomState(0))]
    assert keep[0] == 3  # both gaps 0: kept first, before the grid's draws
    order = keep + [i for i in range(table.num_rows) if i not in keep]
    assert out["source_id"].to_pylist() == [table["source_id"][i].as_py() for i in order]
    assert out["rejected"].to_pylist()[: len(keep)] == [None] * len(keep)
    assert out.drop_columns(["rejected"]).equals(table.drop_columns(["rejected"]).take(order))
    with pytest.raises(DataError, match="order is one of refinement, input"):
        adversarial_refine(table, None, order="random")

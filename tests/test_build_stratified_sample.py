"""The `stratified_sample` build stage (`lexsem.construct.stratified_sample`): proportional
allocation by largest remainder, groups kept whole, the build's seed, rejected rows passed
through, bounded settings; and the shipped `visla_spatial` recipe, which samples its pairs
before the candidates and says at its pause how to change the target."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lexsem.cli import app
from lexsem.construct.catalog import get_stage
from lexsem.construct.stage import StageContext
from lexsem.construct.stratified_sample import MAX_TARGET, allocate, stratified_sample
from lexsem.errors import DataError


def _rows(strata: list[str], **extra: list[Any]) -> pa.Table:
    n = len(strata)
    return pa.table(
        {"source": ["t"] * n, "source_id": [str(i) for i in range(n)], "kind": strata, **extra}
    )


def _ctx(tmp_path: Path, seed: int = 0) -> StageContext:
    return StageContext(tmp_path, seed=seed, stage="sample")


def test_largest_remainder_allocation_by_hand() -> None:
    # sizes 5, 3, 2 (10 units), target 5: quotas 2.5, 1.5, 1.0 -> whole parts 2, 1, 1 (4);
    # 1 left, remainders .5, .5, 0: a tie, the larger stratum (5) first -> 3, 1, 1
    assert allocate([5, 3, 2], 5) == [3, 1, 1]
    # sizes 3, 5, 2: the same tie, the larger stratum is the second -> 1, 3, 1
    assert allocate([3, 5, 2], 5) == [1, 3, 1]
    # sizes 4, 4, 2, target 5: quotas 2, 2, 1 -> exact, nothing left
    assert allocate([4, 4, 2], 5) == [2, 2, 1]
    # sizes 3, 3, 3, target 4: quotas 1.33 each -> 1, 1, 1; 1 left, equal remainders and
    # sizes: the stratum met first -> 2, 1, 1
    assert allocate([3, 3, 3], 4) == [2, 1, 1]
    # sizes 6, 1, 1, 1, 1 (10), target 3: quotas 1.8, .3 x4 -> 1, 0, 0, 0, 0; 2 left:
    # remainders .8 (first), then .3 (four-way tie, equal sizes: the first met) -> 2, 1, 0, 0, 0
    assert allocate([6, 1, 1, 1, 1], 3) == [2, 1, 0, 0, 0]
    # a target at or above the total keeps all
    assert allocate([2, 1], 3) == [2, 1] and allocate([2, 1], 9) == [2, 1]


def test_each_stratum_keeps_its_share_and_row_order(tmp_path: Path) -> None:
    strata = ["a"] * 5 + ["b"] * 3 + ["c"] * 2
    rows = _rows([strata[i] for i in (0, 5, 8, 1, 6, 9, 2, 7, 3, 4)])  # interleaved
    ctx = _ctx(tmp_path)
    out = stratified_sample(rows, ctx, target=5, by="kind")
    assert Counter(out["kind"].to_pylist()) == {"a": 3, "b": 1, "c": 1}
    ids = [int(i) for i in out["source_id"].to_pylist()]
    assert ids == sorted(ids)  # the input's order
    assert ctx.counts["target"] == 5 and ctx.counts["units drawn"] == 5
    assert ctx.counts["units live"] == 10 and ctx.counts["rows dropped"] == 5
    assert ctx.counts["strata"] == 3 and ctx.counts["drawn where kind=a"] == 3


def test_several_columns_make_the_strata(tmp_path: Path) -> None:
    rows = _rows(["a", "a", "a", "a", "b", "b"], side=["l", "l", "r", "r", "l", "l"])
    out = stratified_sample(rows, _ctx(tmp_path), target=3, by=["kind", "side"])
    # strata (a,l)=2, (a,r)=2, (b,l)=2, target 3 of 6: one each
    assert Counter(zip(out["kind"].to_pylist(), out["side"].to_pylist(), strict=True)) == {
        ("a", "l"): 1,
        ("a", "r"): 1,
        ("b", "l"): 1,
    }


def test_groups_are_kept_or_dropped_whole(tmp_path: Path) -> None:
    pair = [p for p in range(8) for _ in range(3)]  # 8 pairs x 3 candidates
    kind = ["x" if p < 4 else "y" for p in pair]
    rows = _rows(kind, pair=pair)
    ctx = _ctx(tmp_path, seed=3)
    out = stratified_sample(rows, ctx, target=4, by="kind", group="pair")
    counts = Counter(out["pair"].to_pylist())
    assert len(counts) == 4 and set(counts.values()) == {3}
    assert Counter(out["kind"].to_pylist()) == {"x": 6, "y": 6}  # 2 pairs of each
    assert ctx.counts["units drawn"] == 4 and ctx.counts["rows drawn"] == 12


def test_a_group_across_strata_is_refused(tmp_path: Path) -> None:
    rows = _rows(["x", "y"], pair=[1, 1])
    with pytest.raises(DataError, match=r"stratified_sample: the rows of group pair=1 differ"):
        stratified_sample(rows, _ctx(tmp_path), target=1, by="kind", group="pair")


def test_the_build_seed_decides_the_draw(tmp_path: Path) -> None:
    rows = _rows(["a"] * 50 + ["b"] * 50)

    def drawn(seed: int) -> list[str]:
        out = stratified_sample(rows, _ctx(tmp_path, seed), target=10, by="kind")
        return out["source_id"].to_pylist()

    assert drawn(7) == drawn(7)
    assert drawn(7) != drawn(8)
    # outside a build (no context) the seed is 0
    alone = stratified_sample(rows, None, target=10, by="kind")
    assert alone["source_id"].to_pylist() == drawn(0)


def test_fewer_rows_than_the_target_keeps_all(tmp_path: Path) -> None:
    rows = _rows(["a", "b", "b"])
    assert stratified_sample(rows, _ctx(tmp_path), target=10, by="kind").equals(rows)


def test_no_by_is_one_stratum(tmp_path: Path) -> None:
    out = stratified_sample(_rows(["a"] * 9 + ["b"]), _ctx(tmp_path), target=4)
    assert out.num_rows == 4


def test_rejected_rows_pass_through_and_are_not_drawn(tmp_path: Path) -> None:
    rejected = [None, "bad", None, None, "bad", None]
    rows = _rows(["a"] * 6, rejected=pa.array(rejected, pa.string()))
    ctx = _ctx(tmp_path)
    out = stratified_sample(rows, ctx, target=2, by="kind")
    got = out["rejected"].to_pylist()
    assert got.count("bad") == 2 and got.count(None) == 2
    assert ctx.counts["units live"] == 4 and ctx.counts["rows dropped"] == 2


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"target": 0}, r"stratified_sample: target is .* an integer from 1 to 10,000,000, got 0"),
        ({"target": MAX_TARGET + 1}, r"target is .*, got 10000001"),
        ({"target": True}, r"target is .*, got True"),
        ({"target": "5"}, r"target is .*, got '5'"),
        ({"target": 2, "by": "nope"}, r"stratified_sample: no column 'nope' \(setting `by`\)"),
        ({"target": 2, "by": ""}, r"stratified_sample: by is a column name or a list"),
        ({"target": 2, "by": [1]}, r"stratified_sample: by is a column name or a list"),
        ({"target": 2, "group": "nope"}, r"no column 'nope' \(setting `group`\)"),
        ({"target": 2, "group": 3}, r"stratified_sample: group is a column name, got 3"),
    ],
)
def test_bad_settings_are_clear_errors(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(DataError, match=message):
        stratified_sample(_rows(["a", "b", "c"]), _ctx(tmp_path), **settings)


def test_the_stage_is_registered_and_declares_its_columns() -> None:
    stage = get_stage("stratified_sample")
    assert stage.fn is stratified_sample and stage.target == "target"
    assert stage.columns is not None
    declared = stage.columns(frozenset(), target=3, by=["a", "b"], group="g")
    assert dict(declared.reads) == {"by[0]": "a", "by[1]": "b", "group": "g"}


# Synthetic VSR captions: each image has swapped pairs under one relation or another.
def _vsr(path: Path) -> Path:
    records = []
    for i in range(12):
        relation = "on" if i < 8 else "under"
        records += [
            {"image": f"{i}.jpg", "caption": f"The cat{i} is {relation} the box{i}.",
             "relation": relation, "label": 1},
            {"image": f"{i}.jpg", "caption": f"The box{i} is {relation} the cat{i}.",
             "relation": relation, "label": 0},
        ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_the_shipped_recipe_samples_pairs_and_names_the_target_at_its_pause(
    tmp_path: Path,
) -> None:
    """`lexsem build visla_spatial --set sample.target=4`: 4 of the 12 pairs drawn by relation
    (8 `on`, 4 `under`: 8/3 and 4/3 -> 2 + 1, 1 left to the larger remainder .67 of `on`: 3
    and 1), 3 candidates each; the pause names the option that changes the target."""
    vsr = _vsr(tmp_path / "vsr.jsonl")
    out = tmp_path / "b"
    args = ["build", "visla_spatial", "--input", str(vsr), "-o", str(out), "-q",
            "--set", "sample.target=4"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 3, res.output
    assert "paused at stage 4/5 validation" in res.output
    sample = pq.read_table(out / "stages" / "02-sample.parquet")
    assert Counter(sample["p1_relation"].to_pylist()) == {"on": 3, "under": 1}
    candidates = pq.read_table(out / "stages" / "03-candidates.parquet")
    assert candidates.num_rows == 12
    said = "to change how many it keeps, add --set sample.target=N (now 4) to the build command"
    assert said in res.output.replace("\n", " ")
    assert said in (out / "human" / "validate" / "README.md").read_text().replace("\n", " ")
    again = CliRunner().invoke(app, args)  # the same draw: nothing before the pause reruns
    assert again.exit_code == 3, again.output
    assert pq.read_table(out / "stages" / "02-sample.parquet").equals(sample)


def test_the_shipped_recipe_states_its_target(tmp_path: Path) -> None:
    from lexsem.construct.recipe import load_recipe

    recipe = load_recipe("visla_spatial", input=_vsr(tmp_path / "vsr.jsonl"))
    assert [s.label for s in recipe.stages][:3] == ["pairs", "sample", "candidates"]
    sample = next(s for s in recipe.stages if s.label == "sample")
    assert sample.use == "stratified_sample"
    assert sample.settings == {"target": 652, "by": "p1_relation"}

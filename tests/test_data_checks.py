"""Data that is not what it claims is said so, loudly (docs/reliability.md, "Data").

Errors: duplicate, null, NaN or empty item ids; an empty dataset; an empty subset the user
named. Warnings recorded in run.json (and printed by `lexsem eval`): an empty subset of a
whole-benchmark selection (left out), fewer rows than published, rows of an unknown type left
out, incomplete rows left out of a user's file.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.fakes import BagOfWordsEncoder
from builders.hf_parquet import bivlc_columns, winoground_columns, write_parquet
from lexsem import evaluate
from lexsem.benchmarks import catalog as registry
from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.checks import DataWarning
from lexsem.benchmarks.formats import load_scpp_json, load_sugarcrepe_json
from lexsem.benchmarks.load import load_benchmark
from lexsem.benchmarks.sources.files import file_loader
from lexsem.cli import app
from lexsem.download import SourceFile
from lexsem.errors import DataError

NAME = "checked_pp"
ROWS = [
    ("A cat chases a dog.", "A dog is chased by a cat.", "A dog chases a cat."),
    ("A man rides a horse.", "A horse carries a man.", "A horse rides a man."),
    ("A red ball on a box.", "On a box lies a red ball.", "A red box on a ball."),
]


def _recs(ids: list[Any], rows: list[tuple[str, str, str]] = ROWS) -> list[dict[str, Any]]:
    return [
        {"id": i, "filename": f"{k}.jpg", "caption": p, "caption2": q, "negative_caption": n}
        for k, (i, (p, q, n)) in enumerate(zip(ids, rows, strict=False))
    ]


def _register(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    expected: dict[str, int] | None = None,
) -> Path:
    """Pinned SugarCrepe++-format files (their sha256 pinned) as benchmark NAME."""
    data = tmp_path / "data"
    subsets = []
    for sub, text in files.items():
        path = data / NAME / f"{sub}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        n = (expected or {}).get(sub, len(json.loads(text)))
        source = SourceFile(f"{NAME}/{sub}.json", "http://127.0.0.1:9/x", sha)
        subsets.append(SubsetSpec(sub, source, expected_items=n))
    spec = Benchmark(
        name=NAME,
        description="test fixture",
        item_kind="triplet",
        subsets=tuple(subsets),
        loader=file_loader(load_scpp_json),
        text_tasks=("tot",),
    )
    monkeypatch.setattr(registry.BENCHMARKS, "_entries", dict(registry.BENCHMARKS._entries))
    registry.BENCHMARKS.add(NAME, spec, replace=True)
    return data


# -- ids --------------------------------------------------------------------------------------


def test_duplicate_ids_in_a_pinned_file_are_an_error_naming_file_and_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _register(tmp_path, monkeypatch, {"swap_obj": json.dumps(_recs([0, 1, 1]))})
    with pytest.raises(DataError, match=r"swap_obj\.json.*duplicate item id '1' \(items #1 and #2"):
        evaluate(BagOfWordsEncoder(), [NAME], data_dir=data, n_boot=0)


@pytest.mark.parametrize("bad", [None, math.nan, "", True], ids=["null", "nan", "empty", "bool"])
def test_null_nan_or_empty_ids_are_an_error_naming_file_and_row(tmp_path: Path, bad: Any) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_recs([0, bad, 2])), encoding="utf-8")  # NaN written as `NaN`
    with pytest.raises(DataError, match=r"s\.json, item 1: item #1: the item id is"):
        load_scpp_json(path, "s")


def test_a_key_repeated_in_a_sugarcrepe_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "sc.json"
    rec = '{"filename": "a.jpg", "caption": "a b", "negative_caption": "b a"}'
    path.write_text(f'{{"0": {rec}, "1": {rec}, "0": {rec}}}', encoding="utf-8")
    with pytest.raises(DataError, match=r"sc\.json, item 0: the key '0' appears twice"):
        load_sugarcrepe_json(path, "sc")


def _winoground(data: Path, **changes: list[Any]) -> None:
    cols = {**winoground_columns(), **changes}
    write_parquet(data / "hf" / "facebook" / "winoground" / "data" / "test-00000.parquet", cols)


@pytest.mark.parametrize(
    "ids,match",
    [
        ([0, math.nan, 2], r"row 1: winoground: field 'id': the item id is nan"),
        ([0, 1, 0], "#0 and #2"),
    ],
    ids=["nan", "duplicate"],
)
def test_nan_or_duplicate_ids_in_a_hf_dataset_are_an_error(
    tmp_path: Path, ids: list[Any], match: str
) -> None:
    _winoground(tmp_path, id=ids)
    with pytest.raises(DataError, match=match):
        load_benchmark("winoground", data_dir=tmp_path)


# -- empty data -------------------------------------------------------------------------------


def test_an_empty_dataset_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(DataError, match=r"no items to evaluate in .*empty\.json"):
        evaluate(BagOfWordsEncoder(), [f"scpp:{path}"], n_boot=0)


def test_an_empty_subset_is_left_out_with_a_warning_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"swap_obj": json.dumps(_recs([0, 1, 2])), "swap_att": "[]"}
    data = _register(tmp_path, monkeypatch, files, expected={"swap_att": 666})
    with pytest.warns(
        DataWarning, match=r"checked_pp/swap_att: no items \(the published data has 666\); left out"
    ):
        run = evaluate(BagOfWordsEncoder(), [NAME], data_dir=data, n_boot=0)
    info = run.record.benchmarks[0]
    assert info.subsets == ["swap_obj"]
    assert [(n.kind, n.subset) for n in info.notices] == [("empty_subset", "swap_att")]
    assert all(math.isfinite(r.accuracy) for r in run.record.results)  # no NaN subset row
    assert {r.subset for r in run.record.results} == {"swap_obj"}
    with pytest.raises(DataError, match=r"checked_pp/swap_att: the subset you selected holds no"):
        evaluate(BagOfWordsEncoder(), [f"{NAME}/swap_obj,swap_att"], data_dir=data, n_boot=0)


def test_a_text_encoder_runs_on_a_triplet_file_without_filenames(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    recs = [{k: v for k, v in r.items() if k != "filename"} for r in _recs([0, 1, 2])]
    path.write_text(json.dumps(recs))
    run = evaluate(BagOfWordsEncoder(), [f"scpp:{path}"], n_boot=0)
    assert {r.task for r in run.record.results} >= {"tot"}
    assert len(run.items) > 0


def test_an_empty_user_parquet_names_its_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.parquet"
    write_parquet(path, {k: v[:0] for k, v in bivlc_columns().items()})
    res = CliRunner().invoke(app, ["eval", "-m", "minilm", "-b", f"bivlc:{path}"])
    assert res.exit_code == 2, res.output
    assert res.output.strip().endswith("mine.parquet"), res.output


def test_a_named_bivlc_subset_without_rows_is_named(tmp_path: Path) -> None:
    """The file holds rows, all of other types: the error names the subset, not "no items"."""
    cols = {k: v[:2] for k, v in bivlc_columns().items()}  # swap_obj and replace_att only
    write_parquet(tmp_path / "hf" / "imirandam" / "BiVLC" / "data" / "test.parquet", cols)
    with pytest.raises(DataError, match=r"bivlc/add_att: the subset you selected holds no items"):
        load_benchmark("bivlc/add_att", data_dir=tmp_path)


# -- fewer rows than published ----------------------------------------------------------------


def test_a_partial_snapshot_is_warned_recorded_and_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _register(
        tmp_path, monkeypatch, {"swap_obj": json.dumps(_recs([0, 1, 2]))}, {"swap_obj": 245}
    )
    want = r"checked_pp/swap_obj: 3 rows read from checked_pp/swap_obj\.json, but the pinned "
    want += "public file has 245"
    with pytest.warns(DataWarning, match=want):
        run = evaluate(BagOfWordsEncoder(), [NAME], data_dir=data, n_boot=0)
    (notice,) = run.record.benchmarks[0].notices
    assert notice.kind == "row_count" and "not comparable with published numbers" in notice.message

    monkeypatch.setattr("lexsem.models.factory.load_model", lambda *a, **k: BagOfWordsEncoder())
    out = CliRunner().invoke(
        app, ["eval", "-m", "bow", "-b", NAME, "--data-dir", str(data), "-o", str(tmp_path / "r")]
    )
    assert out.exit_code == 0, out.output
    assert "warning: checked_pp/swap_obj: 3 rows read" in out.output
    saved = json.loads((tmp_path / "r" / "run.json").read_text())
    assert saved["benchmarks"][0]["notices"][0]["kind"] == "row_count"


def test_a_partial_hf_snapshot_is_warned(tmp_path: Path) -> None:
    _winoground(tmp_path)
    with pytest.warns(
        DataWarning, match=r"winoground/all: 3 rows read .* the published dataset has 400"
    ):
        loaded = load_benchmark("winoground", data_dir=tmp_path)
    assert [n.kind for n in loaded.notices] == ["row_count"]


# -- rows left out ----------------------------------------------------------------------------

BIVLC_ROWS = [
    ("A man throwing a ball.", "A ball throwing a man.", "swap", "obj"),
    ("A red car.", "A blue car.", "replace", "att"),
    ("A cup on a table.", "No cup on a table.", "negate", "obj"),  # no such subset
    ("A dog on a sofa.", "A dog and a cat on a sofa.", "add", "obj"),
]


def test_rows_of_an_unknown_type_are_warned_with_count_and_ids(tmp_path: Path) -> None:
    path = tmp_path / "hf" / "imirandam" / "BiVLC" / "data" / "test-00000.parquet"
    write_parquet(path, bivlc_columns(BIVLC_ROWS))
    with pytest.warns(
        DataWarning, match=r"bivlc: 1 row\(s\) of a type .* types 'negate_obj' \(1\); ids 2"
    ):
        loaded = load_benchmark("bivlc", data_dir=tmp_path)
    unknown = [n for n in loaded.notices if n.kind == "unknown_rows"]
    assert [n.ids for n in unknown] == [("2",)]
    assert loaded.unassigned == ["2"]
    assert "2" not in {it.id for it in loaded.items}
    # a selection of named subsets warns too, but the rows count against no coverage
    with pytest.warns(DataWarning, match="negate_obj"):
        assert load_benchmark("bivlc/swap_obj", data_dir=tmp_path).unassigned == []


def test_incomplete_rows_of_a_users_file_are_warned_and_count_against_coverage(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mine.tsv"
    lines = ["image\tsent1\tsent2\tBest reference (Semantically close)\tReference-2"]
    lines += [f"i{k}.jpg\t{p}\t{q}\t{n}\tx" for k, (p, q, n) in enumerate(ROWS)]
    lines.append("i9.jpg\tA cup.\tOne cup.\t\tx")  # an empty negative: left out
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.warns(
        DataWarning, match=r"1 incomplete item\(s\) .* left out of .*mine\.tsv: ids 3"
    ):
        run = evaluate(BagOfWordsEncoder(), [f"visla_spatial:{path}"], n_boot=0)
    (notice,) = run.record.benchmarks[0].notices
    assert (notice.kind, notice.ids) == ("dropped_rows", ["3"])
    r = run.record.results[0]
    assert (r.n, r.items_scored, r.items_total) == (3, 3, 4)

"""Runs are compared only on the same benchmark content: two user files that share a name but
not their content (or two versions of a pinned file) have item ids in common, not items.
`compare` refuses the benchmark, naming both files and their sha256 prefixes; `report` shows the
runs in separate tables with the reason in a note (docs/reliability.md, "Reports and
comparisons")."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lexsem
from builders.fakes import TRIPLETS, BagOfWordsEncoder, OtherDual
from builders.run_records import bivlc_results, record, result
from lexsem.analysis.run_comparison import mcnemar
from lexsem.cli import app
from lexsem.errors import LexsemError
from lexsem.report.all_tables import build_tables
from lexsem.results.run import Run


def _user_file(folder: Path, flip: bool) -> Path:
    """`TRIPLETS` in the SugarCrepe++ format under `folder/triplets`; `flip` swaps the first
    swap_obj item's positive and negative (same ids, other content)."""
    files = folder / "triplets"
    files.mkdir(parents=True)
    for sub, rows in TRIPLETS.items():
        swap = flip and sub == "swap_obj"
        recs = [
            {"id": i, "filename": f"{i}.jpg", "caption": n if swap and i == 0 else p1,
             "caption2": p2, "negative_caption": p1 if swap and i == 0 else n}
            for i, (p1, p2, n) in enumerate(rows)
        ]  # fmt: skip
        (files / f"{sub}.json").write_text(json.dumps(recs), encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def user_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("same-name")
    common = {"n_boot": 0, "cache_dir": base / "cache", "offline": True, "tasks": ["tot"]}
    a, b = _user_file(base / "data_a", False), _user_file(base / "data_b", True)
    runs = {
        "a": (BagOfWordsEncoder(16, "bow"), a),
        "a2": (OtherDual(), a),
        "b": (BagOfWordsEncoder(32, "bow32"), b),
    }
    for key, (model, files) in runs.items():
        lexsem.evaluate(model, [f"scpp:{files}"], out=base / "runs" / key, **common)
    return {k: base / "runs" / k for k in runs} | {"file_a": a, "file_b": b}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def test_compare_refuses_two_files_of_one_name_naming_both(user_runs: dict[str, Path]) -> None:
    res = CliRunner().invoke(app, ["compare", str(user_runs["a"]), str(user_runs["b"])])
    assert res.exit_code == 2, res.output
    assert "| benchmark |" not in res.output and "Traceback" not in res.output
    line = " ".join(res.output.split())
    assert line.startswith("error: nothing to compare: scpp:triplets: not comparable:")
    assert "scpp:triplets/swap_obj was read from different data" in line
    sub = "swap_obj"
    for folder in ("a", "b"):
        file = user_runs[f"file_{folder}"] / f"{sub}.json"
        assert str(file) in line
        assert f"sha256 {_sha(file)}" in line
    # the same file: compared as before
    ok = CliRunner().invoke(app, ["compare", str(user_runs["a"]), str(user_runs["a2"])])
    assert ok.exit_code == 0, ok.output
    assert "| scpp:triplets | tot |" in ok.output
    with pytest.raises(LexsemError, match="not comparable"):
        mcnemar(Run.load(user_runs["a"]), Run.load(user_runs["b"]), "scpp:triplets", "tot")


def test_report_shows_runs_on_different_data_in_separate_tables(
    user_runs: dict[str, Path],
) -> None:
    runs = [str(user_runs[k]) for k in ("a", "b", "a2")]
    res = CliRunner().invoke(app, ["report", *runs])
    assert res.exit_code == 0, res.output
    tables = [t for t in res.stdout.split("### ") if t.strip()]
    assert len(tables) == 2 * len(["tot"])  # one table per group of comparable runs
    first, second = tables
    assert "[data 1 of 2]" in first.splitlines()[0] and "[data 2 of 2]" in second.splitlines()[0]
    assert "| bow |" in first and "| tiny-dual |" in first and "| bow32 |" not in first
    assert "| bow32 |" in second and "| bow |" not in second
    for t in tables:
        assert "read from different data" in " ".join(t.split())


def test_pinned_file_versions_are_kept_apart_too() -> None:
    """Two runs of one registered benchmark whose file of one subset differs (another
    version): separate tables; runs that share it, one table."""
    x = record("x", [result("bivlc", "bivlc", m, "all", 50.0) for m in ("i2t", "t2i", "group")])
    y = record("y", [result("bivlc", "bivlc", m, "all", 40.0) for m in ("i2t", "t2i", "group")])
    z = record("z", bivlc_results(30.0))
    y.benchmarks[0].files[0].sha256 = "1" * 64
    titles = [t.title for t in build_tables([x, y])]
    assert titles == [
        "bivlc — all metrics, all items [data 1 of 2]",
        "bivlc — all metrics, all items [data 2 of 2]",
    ]
    assert next(t.title for t in build_tables([x, z])) == (
        "bivlc — all metrics, all items and per type"
    )  # no subset in common with other content: one table

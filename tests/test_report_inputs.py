"""What `report` and `compare` are given, as a tired researcher gives it: a glob over `runs/`
with folders that are not runs, a run whose per-item file is damaged inside or missing, sizes
out of bounds, an HTML page into a read-only folder or onto a folder (docs/reliability.md,
"Reports and comparisons")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lexsem
from builders.fakes import BagOfWordsEncoder
from builders.privileges import where_permission_bits_apply
from lexsem.cli import app


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs/a and runs/b (two runs of synthetic), beside runs/data (the docs' data folder)."""
    base = tmp_path_factory.mktemp("report-inputs") / "runs"
    common = {"n_boot": 0, "cache_dir": base.parent / "cache", "offline": True}
    for name, dim in (("a", 16), ("b", 64)):
        lexsem.evaluate(BagOfWordsEncoder(dim, f"bow{dim}"), ["synthetic"], out=base / name,
                        **common)  # fmt: skip
    (base / "data").mkdir()
    (base / "data" / "notes.txt").write_text("benchmark files", encoding="utf-8")
    return base


def _cli(*args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def _one_error(code: int, out: str, err: str, *parts: str) -> None:
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("error: "), (out, err)
    for p in parts:
        assert p in err, (p, err)


def _copy(runs: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(runs / "a", target)
    return target


# -- the per-item file ---------------------------------------------------------------------------


def test_items_damaged_inside_the_file_are_an_error_for_the_tables_too(
    runs: Path, tmp_path: Path
) -> None:
    run = _copy(runs, tmp_path)
    file = run / "items.parquet"
    data = bytearray(file.read_bytes())
    middle = len(data) // 3
    data[middle : middle + 64] = bytes(64)  # footer intact: only the pages are damaged
    file.write_bytes(bytes(data))
    for extra in ([], ["--html", tmp_path / "r.html"]):
        _one_error(*_cli("report", run, *extra), str(file), "unreadable per-item file")
    _one_error(*_cli("compare", run, runs / "b"), str(file))
    assert not (tmp_path / "r.html").exists()


def test_items_cut_in_the_middle_are_an_error_for_the_tables(runs: Path, tmp_path: Path) -> None:
    run = _copy(runs, tmp_path)
    file = run / "items.parquet"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    _one_error(*_cli("report", run), str(file), "unreadable per-item file")


def test_missing_items_give_the_tables_with_a_warning(runs: Path, tmp_path: Path) -> None:
    run = _copy(runs, tmp_path)
    (run / "items.parquet").unlink()
    code, out, err = _cli("report", run)
    assert code == 0, err
    assert "| bow16 |" in out
    assert err == (
        f"warning: {run / 'items.parquet'}: no per-item file; tables from run.json only "
        "(--html and compare need it)\n"
    )
    code, out, err = _cli("report", run, "--html", tmp_path / "r.html")
    _one_error(code, out, err, f"{run / 'items.parquet'}: no per-item file")


# -- sizes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--ci", "--n-boot", "-3"], "--n-boot -3: must be at least 0"),
        (["--html", "{tmp}/r.html", "--n-boot", "-3"], "--n-boot -3: must be at least 0"),
        (["--html", "{tmp}/r.html", "--seed", "-1"], "--seed -1: must be at least 0"),
    ],
)
def test_sizes_out_of_bounds_are_one_line_before_any_work(
    runs: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    given = [a.replace("{tmp}", str(tmp_path)) for a in args]
    _one_error(*_cli("report", runs / "a", *given), said)
    assert list(tmp_path.iterdir()) == []


# -- folders that are not runs -------------------------------------------------------------------


def test_a_glob_over_runs_skips_what_is_not_a_run(runs: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    page = tmp_path / "page.html"
    page.write_text("<html>", encoding="utf-8")
    code, out, err = _cli("report", *sorted(runs.iterdir()), tmp_path / "empty", page)
    assert code == 0, err
    assert "| bow16 |" in out and "| bow64 |" in out
    assert err.splitlines() == [
        f"warning: {runs / 'data'}: not a run folder (no run.json), skipped",
        f"warning: {tmp_path / 'empty'}: not a run folder (no run.json), skipped",
        f"warning: {page}: not a run folder (a file; give a run folder or its run.json), skipped",
    ]
    code, out, err = _cli("report", runs / "data", tmp_path / "empty")
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (
        "error: no run among the 2 paths given: give run folders (each holds run.json and "
        "items.parquet)"
    )
    _one_error(*_cli("compare", runs / "a", runs / "data"),
               f"{runs / 'data'}: not a run folder (no run.json)")  # fmt: skip


# -- the HTML page and the table file ------------------------------------------------------------


def test_html_onto_a_folder_is_one_line_before_any_work(runs: Path, tmp_path: Path) -> None:
    example = tmp_path / "report.html"
    _one_error(*_cli("report", runs / "a", "--html", tmp_path),
               f"--html {tmp_path}: is a folder; give a file name (e.g. {example})")  # fmt: skip
    _one_error(*_cli("report", runs / "a", "-o", tmp_path), f"--out {tmp_path}: is a folder")
    _one_error(*_cli("report", runs / "a", "-o", tmp_path / "no" / "t.md"),
               f"{tmp_path / 'no'} does not exist")  # fmt: skip


@where_permission_bits_apply
def test_html_into_a_read_only_folder_is_one_line_before_any_work(
    runs: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o555)
    try:
        assert not os.access(shared, os.W_OK)
        page = shared / "r.html"
        _one_error(*_cli("report", runs / "a", "--html", page),
                   f"--html {page}: cannot write there: permission denied")  # fmt: skip
        assert list(shared.iterdir()) == []
    finally:
        shared.chmod(0o755)

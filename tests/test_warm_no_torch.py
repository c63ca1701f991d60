"""A rerun served entirely from the store imports neither torch nor transformers nor open_clip
(nor scipy: its bootstrap intervals are stored too, `lexsem.stats.bootstrap.ci_memo`).

Importing torch alone takes seconds; a warm `lexsem eval` needs none of it: the fingerprint
needs no weights, the device needs no torch on a machine without GPU device nodes, the
transformers backends read config.json, and the open_clip backend reads the registry facts it
remembered (`openclip/facts.py`) instead of importing open_clip. Checked end to end: the CLI runs
twice in a fresh interpreter on tiny models (an open_clip arch registered in the first run only,
and a transformers CLIP folder), and the second reports which packages it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from builders.backends import require
from lexsem.errors import ModelError
from lexsem.models.backends.openclip import facts as F
from lexsem.models.backends.openclip import install
from lexsem.models.backends.openclip.encoder import OpenClipEncoder
from lexsem.models.backends.openclip.pretrained import registry_facts

HEAVY = ("torch", "transformers", "open_clip", "torchvision", "scipy")
TINY = "lexsem-tiny-warm"
TINY_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}
# runs the CLI app in this interpreter, then prints which heavy packages it imported; argv[1]
# is a folder of open_clip arch configs to register first ("-": none)
WRAPPER = f"""
import json, sys
if sys.argv[1] != "-":
    import open_clip
    open_clip.add_model_config(sys.argv[1])
from lexsem.cli import app
sys.argv = ["lexsem", *sys.argv[2:]]
code = 0
try:
    app()
except SystemExit as exc:
    code = exc.code
print("IMPORTED " + json.dumps({{"exit": code, **{{m: m in sys.modules for m in {HEAVY!r}}}}}))
"""


@pytest.fixture(scope="module")
def oc() -> Any:
    try:
        import open_clip
    except Exception as exc:
        require(False, f"open_clip does not import ({exc})")
        raise
    return open_clip


@pytest.fixture(scope="module")
def tiny_arch(oc: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(folder of the tiny arch's config, a random checkpoint of it)."""
    import torch

    configs = tmp_path_factory.mktemp("warm-configs")
    (configs / f"{TINY}.json").write_text(json.dumps(TINY_CFG))
    oc.add_model_config(configs)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _, _ = oc.create_model_and_transforms(TINY)
    ckpt = tmp_path_factory.mktemp("warm-ckpt") / f"{TINY}.pt"
    torch.save(model.state_dict(), ckpt)
    return configs, ckpt


def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a process that has not imported open_clip, which must not be imported now."""

    def no_import() -> Any:
        raise AssertionError("open_clip was imported")

    monkeypatch.delitem(sys.modules, "open_clip")
    monkeypatch.setattr(install, "import_open_clip", no_import)


# -- the memo of registry facts -------------------------------------------------------------------
def test_remembered_facts_build_the_same_encoder(
    tiny_arch: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ckpt = tiny_arch
    specs = [f"openclip:{TINY}@{ckpt}?quick_gelu=false", "openclip:ViT-B-32-quickgelu/openai"]
    live = [OpenClipEncoder(s) for s in specs]
    wrong = "openclip:ViT-B-32/openai"  # QuickGELU weights on a GELU arch: refused
    with pytest.raises(ModelError, match="use openclip:ViT-B-32-quickgelu/openai"):
        OpenClipEncoder(wrong)
    _fresh_process(monkeypatch)
    for spec, want in zip(specs, live, strict=True):
        got = OpenClipEncoder(spec)
        assert got.source.facts == want.source.facts
        assert got.fingerprint == want.fingerprint
        assert got.describe() == want.describe()
    # the quick_gelu policy runs on remembered facts as on the registry's
    with pytest.raises(ModelError, match="use openclip:ViT-B-32-quickgelu/openai"):
        OpenClipEncoder(wrong)


def test_no_memo_imports_open_clip(monkeypatch: pytest.MonkeyPatch, oc: Any) -> None:
    _fresh_process(monkeypatch)  # the cache folder of this test is empty
    with pytest.raises(AssertionError, match="open_clip was imported"):
        OpenClipEncoder("openclip:ViT-B-16/openai")


def test_memo_ignored_when_the_shipped_config_differs(oc: Any) -> None:
    facts = registry_facts(oc, "ViT-B-32", None)
    F.write_memo(facts)
    assert F.read_memo("ViT-B-32", None) == facts
    edited = replace(facts, config={**facts.config, "embed_dim": 7})
    F.write_memo(edited)  # e.g. an arch registered under a built-in name
    assert F.read_memo("ViT-B-32", None) is None
    # a registered arch open_clip does not ship: its memo is all there is
    other = replace(facts, arch="lexsem-not-shipped")
    F.write_memo(other)
    assert F.read_memo("lexsem-not-shipped", None) == other


def test_memo_keyed_by_the_installed_version(oc: Any) -> None:
    facts = replace(registry_facts(oc, "ViT-B-32", None), version="0.0-not-installed")
    F.write_memo(facts)
    assert F.read_memo("ViT-B-32", None) is None
    assert not F.memo_path(facts.version, "ViT-B-32", None).exists()


# -- the CLI, twice -------------------------------------------------------------------------------
def _cli(register: str, args: list[str], tmp: Path) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LEXSEM_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, register, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("IMPORTED ")]
    assert lines, proc.stdout + proc.stderr
    report = json.loads(lines[-1].removeprefix("IMPORTED "))
    assert report["exit"] == 0, proc.stdout + proc.stderr
    return report


@pytest.mark.torch
@pytest.mark.parametrize("backend", ["openclip", "clip"])
def test_warm_rerun_imports_no_torch(
    backend: str, tiny_arch: tuple[Path, Path], tmp_path: Path
) -> None:
    configs, ckpt = tiny_arch
    if backend == "openclip":
        spec, register = f"openclip:{TINY}@{ckpt}?quick_gelu=false", str(configs)
    else:
        from builders.tiny_dual_models import write_clip

        spec, register = f"clip:{write_clip(tmp_path / 'clip')}", "-"
    out = tmp_path / "run"
    args = ["eval", "-m", spec, "-b", "synthetic/swap_att", "-o", str(out), "--force"]
    args += ["--n-boot", "200", "--num-workers", "0", "-q"]  # intervals: from the store too
    cold = _cli(register, args, tmp_path)
    assert cold["torch"]  # the cold run encoded
    first = json.loads((out / "run.json").read_text())
    warm = _cli("-", args, tmp_path)  # a new interpreter; open_clip's tiny arch not registered
    assert not any(warm[m] for m in HEAVY), warm
    second = json.loads((out / "run.json").read_text())
    assert second["timings"]["n_texts_encoded"] == 0
    assert second["timings"]["n_texts_cached"] == first["timings"]["n_texts_unique"] > 0
    assert second["results"] == first["results"]
    assert all(r["ci_low"] is not None for r in second["results"])
    assert second["model"]["fingerprint"] == first["model"]["fingerprint"]

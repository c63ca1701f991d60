""" "Can this spec run offline" is asked through the backend registry: each backend answers
`offline_needs(spec)` (`LazyModel` for files found as Hugging Face finds them, open_clip for its
tags and checkpoints, a user's backend for itself), and `lexsem reproduce` asks only that."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from builders.hf_cache import empty_hub_cache
from lexsem.models import backend_registry
from lexsem.models.lazy import LazyModel, builds
from lexsem.models.spec import ModelSpec, parse_model_spec
from lexsem.report.paper.facts import ModelRow
from lexsem.reproduce.availability import missing


@pytest.fixture
def empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return empty_hub_cache(tmp_path, monkeypatch)


def _needs(spec: str) -> str | None:
    return backend_registry.offline_needs(parse_model_spec(spec))


def test_hub_ids_need_the_hub_and_local_folders_nothing(empty_hub: Path, tmp_path: Path) -> None:
    assert _needs("st:org/not-cached-here") == "the Hugging Face Hub: org/not-cached-here"
    assert _needs(f"hf:{tmp_path}") is None
    row = ModelRow(name="BGE", spec="st:BAAI/bge-small-en-v1.5")
    assert missing(row) == "the Hugging Face Hub: BAAI/bge-small-en-v1.5"


def test_open_clip_answers_for_its_tags_and_checkpoints(empty_hub: Path, tmp_path: Path) -> None:
    pytest.importorskip("open_clip")
    spec = "openclip:ViT-B-32/laion2b_s34b_b79k"
    assert _needs(spec) == (
        "the open_clip weights of ViT-B-32/laion2b_s34b_b79k "
        "(laion/CLIP-ViT-B-32-laion2B-s34B-b79K)"
    )
    ckpt = tmp_path / "w.pt"
    ckpt.write_bytes(b"not read: only found")
    assert _needs(f"openclip:ViT-B-32@{ckpt}") is None
    gone = _needs(f"openclip:ViT-B-32@{tmp_path / 'gone.pt'}")
    assert gone is not None and gone.startswith("open_clip and the weights of openclip:ViT-B-32@")


class _Elsewhere(LazyModel):
    """A backend whose files live somewhere only it knows."""

    backend: ClassVar[str] = "elsewhere"
    description: ClassVar[str] = "a test backend"

    @classmethod
    def offline_needs(cls, spec: ModelSpec) -> str | None:
        return None if spec.name == "here" else f"the elsewhere service: {spec.name}"


@builds(_Elsewhere)
def _open_elsewhere(spec: ModelSpec, **kwargs: object) -> _Elsewhere:
    return _Elsewhere(spec, **kwargs)


@pytest.mark.parametrize("backend", [_Elsewhere, _open_elsewhere], ids=["class", "factory"])
def test_a_backend_answers_for_itself(backend: object) -> None:
    backend_registry.register_backend("elsewhere", backend)  # type: ignore[arg-type]
    try:
        assert missing(ModelRow(name="E", spec="elsewhere:here")) is None
        assert missing(ModelRow(name="E", spec="elsewhere:there")) == (
            "the elsewhere service: there"
        )
    finally:
        backend_registry.unregister_backend("elsewhere")


def test_a_backend_that_does_not_say_needs_the_network() -> None:
    def bare(spec: ModelSpec, **kwargs: object) -> object:
        raise AssertionError("never built")

    bare.backend, bare.description, bare.options = "bare", "", {}  # type: ignore[attr-defined]
    backend_registry.register_backend("bare", bare)  # type: ignore[arg-type]
    try:
        why = missing(ModelRow(name="B", spec="bare:x"))
    finally:
        backend_registry.unregister_backend("bare")
    assert why == "the network: backend 'bare' does not say what it needs offline"


def test_rows_without_a_spec_or_with_a_bad_one() -> None:
    assert missing(ModelRow(name="ALBEF", needs="its LAVIS checkpoint")) == "its LAVIS checkpoint"
    why = missing(ModelRow(name="X", spec="nosuchbackend:x"))
    assert why is not None and why.startswith("a valid spec (unknown model backend")

"""The backend registry: built-in backends found lazily, a user's backend registered in one call
and loaded from its spec string, options checked against each backend's one declaration, and
`import lexsem.models.factory` staying free of torch and transformers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from lexsem import evaluate
from lexsem.errors import LexsemError, ModelError
from lexsem.models import backend_registry
from lexsem.models import factory as registry
from lexsem.models.lazy import LazyModel, builds
from lexsem.models.options import COMMON, Option, positive_int
from lexsem.models.protocols import TextEncoder, TextScorer, fingerprint_key
from lexsem.models.spec import ModelSpec, parse_model_spec

BUILT_IN = [
    "artifact",
    "chat",
    "clip",
    "cola",
    "diffusers",
    "hf",
    "itm",
    "lm",
    "openai",
    "openai-image",
    "openclip",
    "recorded",
    "st",
    "vera",
    "vgpt",
    "vlm",
    "vqa",
]


class CharScorer(LazyModel):
    """A user's backend: a blind text scorer, the number of characters to the power `power`."""

    backend: ClassVar[str] = "chars"
    description: ClassVar[str] = "character counts (a test backend)"
    options: ClassVar[Mapping[str, Option]] = {"dtype": COMMON["dtype"], "power": positive_int(1)}
    lower_is_better: ClassVar[bool] = True

    def _load(self) -> object:
        return object()  # stands for the weights

    def _fingerprint_options(self) -> dict[str, Any]:
        return {"power": self.spec.get("power")}

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        self._ensure_loaded()
        return np.array([float(len(t)) ** self.spec.get("power") for t in texts])


class LongCharScorer(CharScorer):
    """What the `chars2` factory picks for a folder holding a file named `long`."""


@builds(CharScorer)
def open_char_scorer(spec: ModelSpec, **kwargs: Any) -> CharScorer:
    """A factory backend (like `clip:`): the class depends on the model's files."""
    cls = LongCharScorer if (Path(spec.name) / "long").exists() else CharScorer
    return cls(spec, **kwargs)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A user's model folder (its files are the model's identity)."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "table.txt").write_text("a b c")
    return tmp_path / "model"


@pytest.fixture
def chars() -> Iterator[None]:
    backend_registry.register_backend("chars", f"{__name__}:CharScorer")  # lazy, as the built-ins
    try:
        yield
    finally:
        backend_registry.unregister_backend("chars")


def test_built_in_backends_are_registered() -> None:
    # lexsem's own backends (tests may register more in this process, from their own modules)
    own = [
        n for n in backend_registry.names()
        if getattr(backend_registry.get_backend(n), "__module__", "").startswith("lexsem.")
    ]  # fmt: skip
    assert own == BUILT_IN
    for name in BUILT_IN:
        backend = backend_registry.get_backend(name)
        assert backend.backend == name and backend.description
        assert callable(backend) and backend.options  # a class, or clip's factory


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_option_is_declared_once_with_its_default(name: str) -> None:
    """A spec without options gives each declared option's default; each declared option is
    accepted by the spec parser for that backend and refused for backends that do not declare
    it, with the backend's own list of options in the message."""
    backend = backend_registry.get_backend(name)
    model = "ViT-B-32/openai" if name == "openclip" else "org/m"
    bare = parse_model_spec(f"{name}:{model}")
    for key, option in backend.options.items():
        assert bare.get(key) == option.default
    assert bare.get("no_such_option") is None
    with pytest.raises(
        ModelError, match=rf"unknown model option 'colour'; backend '{name}' takes: "
    ):
        parse_model_spec(f"{name}:{model}?colour=red")
    for other in BUILT_IN:
        for key in set(backend_registry.get_backend(other).options) - set(backend.options):
            with pytest.raises(ModelError, match=rf"'{key}' does not apply to backend '{name}'"):
                ModelSpec(name, model, {key: "1"})


def test_user_backend_from_its_spec_string(chars: None, folder: Path) -> None:
    assert "chars" in backend_registry.names()
    spec = parse_model_spec(f"chars:{folder}?power=2&dtype=fp32")
    assert (spec.backend, spec.name, spec.get("power")) == ("chars", str(folder), 2)
    model = registry.load_model(f"chars:{folder}?power=2", device="cpu")
    assert type(model) is CharScorer and isinstance(model, TextScorer)
    assert not isinstance(model, TextEncoder) and not model.loaded
    fp = model.fingerprint
    assert fp["backend"] == "chars" and fp["power"] == 2 and fp["model"]["source"] == "local"
    np.testing.assert_array_equal(model.score_texts(["ab", "abc"]), [4.0, 9.0])
    assert model.loaded
    assert registry.load_text_scorer(f"chars:{folder}").spec.get("power") == 1
    with pytest.raises(ModelError, match="not a text encoder"):
        registry.load_text_encoder(f"chars:{folder}")
    with pytest.raises(ModelError, match=r"'colour'; backend 'chars' takes: dtype, power"):
        parse_model_spec(f"chars:{folder}?colour=red")
    with pytest.raises(ModelError, match="power='0': expected a positive integer"):
        registry.load_model(f"chars:{folder}?power=0")
    with pytest.raises(ModelError, match=r"'max_length' does not apply to backend 'chars'"):
        registry.load_model(f"chars:{folder}", max_length=8)  # keyword options are checked too


def test_user_backend_runs_through_evaluate(chars: None, folder: Path) -> None:
    run = evaluate(f"chars:{folder}", ["synthetic/swap_obj"], n_boot=0)
    assert run.record.config.tasks == ["blind"]
    assert run.record.model.fingerprint_key == fingerprint_key(
        registry.load_model(f"chars:{folder}").fingerprint
    )


def test_user_factory_backend(folder: Path, tmp_path: Path) -> None:
    long = tmp_path / "long-model"
    long.mkdir()
    (long / "long").write_text("")
    with pytest.raises(LexsemError, match="is the 'chars' backend, not 'chars2'"):
        backend_registry.register_backend("chars2", open_char_scorer)
    backend_registry.register_backend("chars", open_char_scorer)
    try:
        assert type(registry.load_model(f"chars:{long}")) is LongCharScorer
        assert type(registry.load_model(f"chars:{folder}")) is CharScorer
        with pytest.raises(ModelError, match="'colour'; backend 'chars' takes: dtype, power"):
            registry.load_model(f"chars:{folder}?colour=red")
    finally:
        backend_registry.unregister_backend("chars")


def test_register_backend_refusals() -> None:
    with pytest.raises(LexsemError, match="'st' is already registered"):
        backend_registry.register_backend("st", "my_package.backends:MyST")
    for bad in ("Chars", "c", "1chars", "my backend"):
        with pytest.raises(LexsemError, match="lowercase letters"):
            backend_registry.register_backend(bad, CharScorer)
    with pytest.raises(LexsemError, match="is the 'chars' backend, not 'other'"):
        backend_registry.register_backend("other", CharScorer)
    backend_registry.register_backend("notone", "json:dumps")  # found out when first looked up
    try:
        with pytest.raises(LexsemError, match="is not a model backend"):
            parse_model_spec("notone:x")
    finally:
        backend_registry.unregister_backend("notone")
    with pytest.raises(
        ModelError, match=r"unknown model backend 'chars'.*known backends: artifact \(.*chat \("
    ):
        parse_model_spec("chars:x")
    with pytest.raises(ModelError, match=r"unknown model backend 'clp' \(did you mean 'clip'\?\)"):
        parse_model_spec("clp:x")


def test_replacing_a_built_in_backend(folder: Path) -> None:
    class MyLM(CharScorer):
        backend: ClassVar[str] = "lm"

    original = backend_registry.get_backend("lm")
    backend_registry.register_backend("lm", MyLM, replace=True)
    try:
        assert type(registry.load_model(f"lm:{folder}")) is MyLM
    finally:
        backend_registry.register_backend(
            "lm", "lexsem.models.backends.lm:PerplexityScorer", replace=True
        )
    assert backend_registry.get_backend("lm") is original


def test_importing_the_registry_stays_light(tmp_path: Path) -> None:
    """Importing the registry loads no backend module; parsing every alias imports the backend
    modules but never torch, transformers or open_clip."""
    code = (
        "import sys\n"
        "import lexsem.models.backend_registry as r\n"
        "import lexsem.models.factory\n"
        "assert not [m for m in sys.modules if m.startswith('lexsem.models.backends.')]\n"
        "from lexsem.models.aliases import ALIASES\n"
        "from lexsem.models.spec import parse_model_spec\n"
        "specs = [parse_model_spec(a) for a in ALIASES]\n"
        "specs += [parse_model_spec(s) for s in ('openai:m', 'chat:m', 'recorded:a.jsonl', "
        "'artifact:det')]\n"
        "specs += [parse_model_spec('diffusers:x'), parse_model_spec('openai-image:m')]\n"
        "assert {s.backend for s in specs} == set(r.names()), r.names()\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'open_clip') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120)


def test_building_a_scorer_needs_no_torch(tmp_path: Path) -> None:
    """A warm rerun of a blind scorer (build + fingerprint) never imports torch."""
    from builders.tiny_text_scorers import write_tiny_gpt2

    folder = write_tiny_gpt2(tmp_path / "gpt2")
    code = (
        "import sys\n"
        "from lexsem.models.factory import load_model\n"
        f"m = load_model('lm:{folder}?dtype=fp32', device='cpu')\n"
        "assert m.fingerprint['backend'] == 'lm' and not m.loaded\n"
        "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120)

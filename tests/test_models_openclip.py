"""The `openclip:` backend against a direct open_clip computation.

A tiny open_clip architecture (embed 16, one layer per tower, 32×32 images, context 16; the
standard CLIP BPE tokenizer) is registered here with `open_clip.add_model_config`, in a GELU and
a QuickGELU variant, randomly initialised, saved as a local checkpoint and loaded back through
the spec string. The QuickGELU checks use open_clip's own pretrained registry (building an
encoder needs no weights), and a registry tag added here whose entry points at a tiny checkpoint.

Needs open_clip (`pip install "lexsem[openclip]"`): skipped locally without it, a failure in CI.
"""

from __future__ import annotations

import builtins
import json
import pickle
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders.backends import require
from builders.numeric import assert_close_to_reference
from lexsem.errors import ModelError
from lexsem.models.backends.openclip import install
from lexsem.models.backends.openclip.encoder import OpenClipEncoder
from lexsem.models.backends.openclip.install import INSTALL_HINT
from lexsem.models.backends.openclip.quickgelu import QuickGeluWarning, resolve_quick_gelu
from lexsem.models.backends.openclip.spec import (
    OpenClipSpec,
    as_openclip_spec,
    parse_openclip_spec,
)
from lexsem.models.protocols import ImageEncoder, TextEncoder, fingerprint_key
from lexsem.models.source import file_digest

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

TINY = "lexsem-tiny"
TINY_QG = "lexsem-tiny-quickgelu"
TAG = "lexsem_test"
CONTEXT = 16
TINY_CFG: dict[str, Any] = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    # the standard CLIP BPE tokenizer needs the full vocabulary
    "text_cfg": {
        "context_length": CONTEXT,
        "vocab_size": 49408,
        "width": 32,
        "heads": 2,
        "layers": 1,
    },
}
TEXTS = [
    "a cat",
    "a small red dog chases the big blue ball on the table",
    "",
    "Two horses, one brown & one white!",
    " ".join(["a red ball and a blue box"] * 8),  # past the 16-token context: truncated
]


def images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    shapes = [(32, 32), (50, 40), (20, 90), (64, 64)]
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in shapes]


# -- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def oc() -> Any:
    try:
        import open_clip
    except Exception as exc:  # not installed, or a torch/torchvision mismatch
        require(False, f"open_clip does not import ({exc}); {INSTALL_HINT}")
        raise
    return open_clip


class Tiny(SimpleNamespace):
    model: Any
    transform: Any
    checkpoint: Path


@pytest.fixture(scope="session")
def tiny(oc: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tiny]:
    """The two tiny archs registered with open_clip, and a random checkpoint of each (.pt and,
    for the GELU one, .safetensors)."""
    configs = tmp_path_factory.mktemp("openclip-configs")
    (configs / f"{TINY}.json").write_text(json.dumps(TINY_CFG))
    (configs / f"{TINY_QG}.json").write_text(json.dumps({**TINY_CFG, "quick_gelu": True}))
    oc.add_model_config(configs)
    out: dict[str, Tiny] = {}
    for seed, arch in enumerate((TINY, TINY_QG)):
        torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, _, transform = oc.create_model_and_transforms(arch)
        model.eval()
        ckpt = tmp_path_factory.mktemp("openclip-ckpt") / f"{arch}.pt"
        torch.save(model.state_dict(), ckpt)
        out[arch] = Tiny(model=model, transform=transform, checkpoint=ckpt)
    return out


@pytest.fixture
def tag_in_registry(oc: Any, tiny: dict[str, Tiny], monkeypatch: pytest.MonkeyPatch) -> dict:
    """A pretrained tag for both tiny archs whose weights (the QuickGELU checkpoint, as a
    registry `file`) were trained with QuickGELU, with its own normalisation."""
    entry = {
        "file": str(tiny[TINY_QG].checkpoint),
        "quick_gelu": True,
        "mean": (0.5, 0.5, 0.5),
        "std": (0.25, 0.25, 0.25),
        "interpolation": "bilinear",
        "resize_mode": "squash",
    }
    registry = oc.pretrained._PRETRAINED
    for arch in (TINY, TINY_QG):
        monkeypatch.setitem(registry, arch, {TAG: dict(entry)})
    return entry


def direct(model: Any, transform: Any, arch: str, oc: Any, prefix: str = "") -> tuple:
    """What open_clip itself gives for TEXTS and images(): (text, image) float32 embeddings."""
    tokenizer = oc.get_tokenizer(arch)
    with torch.no_grad():
        text = model.encode_text(tokenizer([prefix + t for t in TEXTS])).numpy()
        pixels = torch.stack([transform(im) for im in images()])
        image = model.encode_image(pixels).numpy()
    return text, image


def ours(enc: OpenClipEncoder) -> tuple[np.ndarray, np.ndarray]:
    text = enc.encode(TEXTS, batch_size=2)
    image = enc.encode_images(torch.stack([enc.preprocess(im) for im in images()]))
    return text, image


def spec(arch: str, ckpt: Path, **options: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in options.items())
    return f"openclip:{arch}@{ckpt}" + (f"?{query}" if query else "")


# -- embeddings against open_clip ----------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_local_checkpoint_matches_open_clip(
    oc: Any, tiny: dict[str, Tiny], tmp_path: Path, suffix: str
) -> None:
    t = tiny[TINY]
    ckpt = t.checkpoint
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        ckpt = tmp_path / "tiny.safetensors"
        save_file({k: v.contiguous() for k, v in t.model.state_dict().items()}, str(ckpt))
    enc = OpenClipEncoder(spec(TINY, ckpt, quick_gelu="false"), device="cpu")
    assert isinstance(enc, TextEncoder) and isinstance(enc, ImageEncoder)
    assert not enc.loaded
    text, image = ours(enc)
    assert enc.loaded
    want_text, want_image = direct(t.model, t.transform, TINY, oc)
    assert text.dtype == np.float32 and text.shape == (len(TEXTS), 16)
    assert image.dtype == np.float32 and image.shape == (len(images()), 16)
    assert text.flags.c_contiguous and image.flags.c_contiguous
    assert_close_to_reference(text, want_text)
    assert_close_to_reference(image, want_image)
    # unnormalised, as the engine expects
    assert not np.allclose(np.linalg.norm(text, axis=1), 1.0)
    # preprocess is open_clip's eval transform
    for im in images():
        assert torch.equal(enc.preprocess(im), t.transform(im))


def test_prefix_and_numpy_batches(oc: Any, tiny: dict[str, Tiny]) -> None:
    t = tiny[TINY]
    enc = OpenClipEncoder(
        spec(TINY, t.checkpoint, quick_gelu="false", prefix="a+photo+of+"), device="cpu"
    )
    want_text, want_image = direct(t.model, t.transform, TINY, oc, prefix="a photo of ")
    assert_close_to_reference(enc.encode(TEXTS), want_text)
    batch = np.stack([enc.preprocess(im).numpy() for im in images()])
    assert_close_to_reference(enc.encode_images(batch), want_image)
    assert enc.encode_images(torch.zeros((0, 3, 32, 32))).shape == (0, 16)
    assert enc.encode([]).shape == (0, 16)
    with pytest.raises(TypeError):
        enc.encode("one string")
    with pytest.raises(TypeError):
        enc.encode_images([enc.preprocess(images()[0])])


def test_quickgelu_checkpoint_needs_quickgelu(oc: Any, tiny: dict[str, Tiny]) -> None:
    """QuickGELU weights: right under quick_gelu=true (on either arch), silently different
    under GELU — which is why lexsem checks it."""
    t = tiny[TINY_QG]
    want_text, want_image = direct(t.model, t.transform, TINY_QG, oc)
    for s in (spec(TINY, t.checkpoint, quick_gelu="true"), spec(TINY_QG, t.checkpoint)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = OpenClipEncoder(s, device="cpu")
        assert enc.quick_gelu is True
        text, image = ours(enc)
        assert_close_to_reference(text, want_text)
        assert_close_to_reference(image, want_image)
    # the QuickGELU arch without the option: provenance unknown → a warning, its own activation
    assert any(issubclass(w.category, QuickGeluWarning) for w in caught)
    wrong = OpenClipEncoder(spec(TINY, t.checkpoint, quick_gelu="false"), device="cpu")
    assert wrong.quick_gelu is False
    text, image = ours(wrong)
    assert not np.allclose(text, want_text, rtol=1e-3)
    assert not np.allclose(image, want_image, rtol=1e-3)


def test_registry_tag_end_to_end(oc: Any, tiny: dict[str, Tiny], tag_in_registry: dict) -> None:
    # a QuickGELU-trained tag under the GELU arch: refused, naming the right arch
    with pytest.raises(ModelError, match=f"openclip:{TINY_QG}/{TAG}") as err:
        OpenClipEncoder(f"openclip:{TINY}/{TAG}", device="cpu")
    assert "trained with QuickGELU" in str(err.value) and "quick_gelu=false" in str(err.value)
    # the right arch: loads the tag's weights with the tag's preprocessing, as open_clip does
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = OpenClipEncoder(f"openclip:{TINY_QG}/{TAG}", device="cpu")
    model, _, transform = oc.create_model_and_transforms(TINY_QG, pretrained=TAG)
    model.eval()
    want_text, want_image = direct(model, transform, TINY_QG, oc)
    text, image = ours(enc)
    assert_close_to_reference(text, want_text)
    assert_close_to_reference(image, want_image)
    fp = enc.fingerprint
    assert fp["quick_gelu"] is True and fp["activation"] == "QuickGELU"
    assert fp["image"]["mean"] == [0.5, 0.5, 0.5] and fp["image"]["resize_mode"] == "squash"
    assert fp["model"]["source"] == "openclip" and fp["model"]["tag"] == TAG
    assert enc.describe()["trained_quick_gelu"] is True
    # the GELU arch with quick_gelu=true runs the same model
    same = OpenClipEncoder(f"openclip:{TINY}/{TAG}?quick_gelu=true", device="cpu")
    assert_close_to_reference(same.encode(TEXTS), want_text)
    assert same.fingerprint["model"] == fp["model"]
    # asking for the mismatch on purpose: a warning, and GELU in the fingerprint
    with pytest.warns(QuickGeluWarning, match="degraded"):
        bug = OpenClipEncoder(f"openclip:{TINY}/{TAG}?quick_gelu=false", device="cpu")
    assert bug.fingerprint["activation"] == "GELU"
    assert fingerprint_key(bug.fingerprint) != fingerprint_key(same.fingerprint)
    assert not np.allclose(bug.encode(TEXTS), want_text, rtol=1e-3)


def test_open_clip_registry_activations(oc: Any) -> None:
    """open_clip's real tags (construction only: nothing is downloaded or loaded)."""
    with pytest.raises(ModelError, match="openclip:ViT-B-32-quickgelu/openai"):
        OpenClipEncoder("openclip:ViT-B-32/openai")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        right = OpenClipEncoder("openclip:ViT-B-32-quickgelu/openai")
        forced = OpenClipEncoder("openclip:ViT-B-32/openai?quick_gelu=true")
        gelu = OpenClipEncoder("openclip:ViT-B-32/laion2b_s34b_b79k")
        openai_style = OpenClipEncoder("openclip:ViT-B/32-quickgelu/OpenAI")
    assert not right.loaded and not forced.loaded
    assert right.fingerprint["activation"] == forced.fingerprint["activation"] == "QuickGELU"
    assert right.fingerprint["model"] == forced.fingerprint["model"]
    assert right.fingerprint["model"]["tag"] == "openai"
    assert gelu.fingerprint["activation"] == "GELU"
    assert openai_style.arch == "ViT-B-32-quickgelu" and openai_style.pretrained == "openai"
    # GELU-trained weights under a -quickgelu arch are refused the other way round
    with pytest.raises(ModelError, match="openclip:ViT-B-32/laion2b_s34b_b79k"):
        OpenClipEncoder("openclip:ViT-B-32-quickgelu/laion2b_s34b_b79k")
    with pytest.warns(QuickGeluWarning):
        bug = OpenClipEncoder("openclip:ViT-B-32/openai?quick_gelu=false")
    assert bug.fingerprint["activation"] == "GELU"
    assert fingerprint_key(bug.fingerprint) != fingerprint_key(right.fingerprint)


def test_fingerprint_records_activation(tiny: dict[str, Tiny]) -> None:
    ckpt = tiny[TINY].checkpoint
    qg = OpenClipEncoder(spec(TINY, ckpt, quick_gelu="true"))
    ge = OpenClipEncoder(spec(TINY, ckpt, quick_gelu="false"))
    with pytest.warns(QuickGeluWarning, match="quick_gelu=true"):
        unknown = OpenClipEncoder(spec(TINY, ckpt))
    assert qg.fingerprint["activation"] == "QuickGELU" and ge.fingerprint["activation"] == "GELU"
    assert fingerprint_key(qg.fingerprint) != fingerprint_key(ge.fingerprint)
    assert unknown.fingerprint == ge.fingerprint  # the arch's own activation
    assert qg.fingerprint["model"] == {
        "source": "local",
        "file": file_digest(ckpt),
    }
    assert not (qg.loaded or ge.loaded or unknown.loaded)


def test_identity_follows_the_bytes(tiny: dict[str, Tiny], tmp_path: Path) -> None:
    ckpt = tiny[TINY].checkpoint
    copy = tmp_path / "renamed.bin"
    copy.write_bytes(ckpt.read_bytes())
    a = OpenClipEncoder(spec(TINY, ckpt, quick_gelu="false"))
    b = OpenClipEncoder(spec(TINY, copy, quick_gelu="false"))
    assert a.fingerprint == b.fingerprint
    other = OpenClipEncoder(spec(TINY, tiny[TINY_QG].checkpoint, quick_gelu="false"))
    assert other.fingerprint["model"] != a.fingerprint["model"]


def test_lazy_and_picklable(tiny: dict[str, Tiny]) -> None:
    t = tiny[TINY]
    enc = OpenClipEncoder(spec(TINY, t.checkpoint, quick_gelu="false"), device="cpu")
    desc = enc.describe()
    x = enc.preprocess(images()[1])  # the transform needs no weights
    assert not enc.loaded
    assert desc["backend"] == "openclip" and desc["arch"] == TINY
    assert desc["source"]["kind"] == "local" and desc["context_length"] == CONTEXT
    assert x.dtype == torch.float32 and tuple(x.shape) == (3, 32, 32)
    enc.encode(["a cat"])
    clone = pickle.loads(pickle.dumps(enc))
    assert enc.loaded and not clone.loaded
    for im in images():
        assert torch.equal(clone.preprocess(im), enc.preprocess(im))
    assert_close_to_reference(clone.encode(TEXTS), enc.encode(TEXTS))


def test_offline_tag_not_cached(oc: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        oc.pretrained._PRETRAINED,
        "ViT-B-32",
        {"lexsem_absent": {"hf_hub": "lexsem-no-such-org/no-such-repo/", "quick_gelu": False}},
    )
    enc = OpenClipEncoder("openclip:ViT-B-32/lexsem_absent", offline=True)
    with pytest.raises(ModelError, match="not in the local cache and lexsem is offline"):
        enc.encode(["a cat"])


# -- errors --------------------------------------------------------------------------------------
def test_bad_names(oc: Any, tiny: dict[str, Tiny], tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="did you mean ViT-B-32"):
        OpenClipEncoder("openclip:ViT-B-23/openai")
    with pytest.raises(ModelError, match="no pretrained tag 'nonesuch' for ViT-B-32; its tags"):
        OpenClipEncoder("openclip:ViT-B-32/nonesuch")
    with pytest.raises(ModelError, match="is not a file"):
        OpenClipEncoder(f"openclip:ViT-B-32@{tmp_path / 'missing.pt'}")
    with pytest.raises(ModelError, match="max_length=8 is not supported"):
        OpenClipEncoder(spec(TINY, tiny[TINY].checkpoint, quick_gelu="false"), max_length=8)
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    enc = OpenClipEncoder(spec(TINY, broken, quick_gelu="false"))
    with pytest.raises(ModelError, match="could not load open_clip model"):
        enc.encode(["a cat"])
    wrong_arch = OpenClipEncoder(spec("ViT-B-32", tiny[TINY].checkpoint, quick_gelu="false"))
    with pytest.raises(ModelError, match="could not load open_clip model"):
        wrong_arch.encode(["a cat"])


def test_missing_open_clip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "open_clip", None)  # `import open_clip` → ImportError
    ckpt = tmp_path / "w.pt"
    ckpt.write_bytes(b"x")
    with pytest.raises(ModelError) as err:
        OpenClipEncoder(f"openclip:ViT-B-32@{ckpt}?quick_gelu=true")
    assert INSTALL_HINT in str(err.value) and 'pip install "lexsem[openclip]"' in str(err.value)


def test_torchvision_mismatch_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "open_clip":
            raise RuntimeError("operator torchvision::nms does not exist")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "open_clip", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ModelError, match="does not match torch"):
        install.import_open_clip()


# -- the spec and the policy (no open_clip needed) -----------------------------------------------
def test_spec_forms() -> None:
    s = parse_openclip_spec("openclip:ViT-B-32-quickgelu/openai")
    assert (s.arch, s.pretrained, s.checkpoint, s.quick_gelu) == (
        "ViT-B-32-quickgelu",
        "openai",
        None,
        None,
    )
    s = parse_openclip_spec("OpenCLIP:ViT-L-14@/models/my ft@v2.pt?quick_gelu=TRUE&dtype=bf16")
    assert (s.arch, s.pretrained, s.checkpoint) == ("ViT-L-14", None, "/models/my ft@v2.pt")
    assert s.quick_gelu is True and s.dtype == "bf16"
    s = parse_openclip_spec("openclip:ViT-B/32/openai?template=a+photo+of+%7Btext%7D.")
    assert s.arch == "ViT-B-32" and s.format_text("a cat") == "a photo of a cat."
    assert parse_openclip_spec(s.to_string()) == s
    assert s.to_string() == "openclip:ViT-B/32/openai?template=a%20photo%20of%20%7Btext%7D."
    model_spec = SimpleNamespace(
        backend="openclip", name="RN50/openai", options={"quick_gelu": "false"}, alias="rn50"
    )
    converted = as_openclip_spec(model_spec)
    assert converted == OpenClipSpec("RN50/openai", {"quick_gelu": "false"})
    assert converted.alias == "rn50"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("openclip:ViT-B-32", "names no weights"),
        ("openclip:ViT-B-32/", "names no weights"),
        ("openclip:@/x.pt", "ARCH@/path"),
        ("openclip:hf-hub:laion/CLIP-ViT-B-32/x", "not supported"),
        ("openclip:ViT-B-32/openai?max_length=8", "fixed context length"),
        ("openclip:ViT-B-32/openai?pooling=cls", "'pooling' does not apply to backend 'openclip'"),
        ("openclip:ViT-B-32/openai?quick_gelu=yes", "expected true or false"),
        ("openclip:ViT-B-32/openai?dtype=int8", "unknown dtype"),
        ("openclip:ViT-B-32/openai?template=nope", "placeholder"),
        ("openclip:ViT-B-32/openai?prefix=a&template=b+%7Btext%7D", "either prefix or template"),
        ("openclip:ViT-B-32/openai?dtype=fp32&dtype=fp16", "given twice"),
        ("clip:openai/clip-vit-base-patch32", "not an openclip: spec"),
    ],
)
def test_spec_errors(text: str, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        parse_openclip_spec(text)


def test_resolve_quick_gelu_policy() -> None:
    kw = {"label": "m", "arch": "A", "tag": "t"}
    assert resolve_quick_gelu(**kw, arch_quick_gelu=True, trained_quick_gelu=True, option=None)
    assert not resolve_quick_gelu(
        **kw, arch_quick_gelu=False, trained_quick_gelu=False, option=None
    )
    with pytest.raises(ModelError, match="use openclip:A-quickgelu/t"):
        resolve_quick_gelu(
            **kw,
            arch_quick_gelu=False,
            trained_quick_gelu=True,
            option=None,
            right_arch="A-quickgelu",
        )
    with pytest.raises(ModelError, match="add quick_gelu=true"):  # no -quickgelu config exists
        resolve_quick_gelu(**kw, arch_quick_gelu=False, trained_quick_gelu=True, option=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_quick_gelu(**kw, arch_quick_gelu=False, trained_quick_gelu=True, option=True)
    with pytest.warns(QuickGeluWarning, match="degraded"):
        assert not resolve_quick_gelu(
            **kw, arch_quick_gelu=True, trained_quick_gelu=True, option=False
        )
    with pytest.warns(QuickGeluWarning, match="unknown"):
        assert not resolve_quick_gelu(
            **kw, arch_quick_gelu=False, trained_quick_gelu=None, option=None
        )


def test_registered_in_the_factory(tiny: dict[str, Tiny]) -> None:
    """Through `load_image_encoder`: the registry knows the openclip: backend."""
    from lexsem.models import backend_registry
    from lexsem.models import factory as registry

    assert backend_registry.get_backend("openclip") is OpenClipEncoder
    enc = registry.load_image_encoder(spec(TINY, tiny[TINY].checkpoint, quick_gelu="false"))
    assert isinstance(enc, OpenClipEncoder) and enc.quick_gelu is False


# -- a custom architecture from a model-config file ----------------------------------------------
def test_custom_arch_config_file_matches_open_clip(
    oc: Any, tiny: dict[str, Tiny], tmp_path: Path
) -> None:
    """`openclip:/path/arch.json@ckpt`: the tiny arch given as a file (never registered by the
    user) gives open_clip's own embeddings of the same checkpoint."""
    t = tiny[TINY]
    config = tmp_path / "my arch.json"
    config.write_text(json.dumps(TINY_CFG))
    enc = OpenClipEncoder(spec(str(config), t.checkpoint, quick_gelu="false"), device="cpu")
    assert enc.arch.startswith("my arch-") and enc.spec.config_file == config
    text, image = ours(enc)
    want_text, want_image = direct(t.model, t.transform, TINY, oc)
    assert_close_to_reference(text, want_text)
    assert_close_to_reference(image, want_image)
    # an edited file is another arch: another fingerprint
    config.write_text(json.dumps({**TINY_CFG, "embed_dim": 16, "custom_text": False}))
    other = OpenClipEncoder(spec(str(config), t.checkpoint, quick_gelu="false"), device="cpu")
    assert other.arch != enc.arch and other.fingerprint != enc.fingerprint


def test_a_custom_config_named_like_a_builtin_arch_does_not_replace_it(
    oc: Any, tiny: dict[str, Tiny], tmp_path: Path
) -> None:
    builtin = dict(oc.get_model_config("ViT-B-32"))
    config = tmp_path / "ViT-B-32.json"
    config.write_text(json.dumps(TINY_CFG))
    enc = OpenClipEncoder(spec(str(config), tiny[TINY].checkpoint, quick_gelu="false"))
    enc.encode(["a cat"])
    assert oc.get_model_config("ViT-B-32") == builtin
    assert enc.arch != "ViT-B-32" and oc.get_model_config(enc.arch)["embed_dim"] == 16


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", r"bad\.json: not valid JSON"),
        ('{"embed_dim": 16}', r"bad\.json: not an open_clip model config \(it lacks vision_cfg"),
    ],
)
def test_a_bad_custom_config_is_named(
    tiny: dict[str, Tiny], tmp_path: Path, content: str, match: str
) -> None:
    config = tmp_path / "bad.json"
    config.write_text(content)
    with pytest.raises(ModelError, match=match):
        OpenClipEncoder(spec(str(config), tiny[TINY].checkpoint))
    with pytest.raises(ModelError, match=r"missing\.json: cannot be read"):
        OpenClipEncoder(spec(str(tmp_path / "missing.json"), tiny[TINY].checkpoint))
    with pytest.raises(ModelError, match=r"takes a local checkpoint"):
        parse_openclip_spec(f"openclip:{config}/openai")


def test_custom_arch_from_the_cli(tiny: dict[str, Tiny], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lexsem.cli import app

    config = tmp_path / "cli-arch.json"
    config.write_text(json.dumps(TINY_CFG))
    model = spec(str(config), tiny[TINY].checkpoint, quick_gelu="false")
    args = ["eval", "-m", model, "-b", "synthetic/swap_att", "--n-boot", "0"]
    res = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "run"), "--num-workers", "0"])
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["model"]["fingerprint"]["arch"].startswith("cli-arch-")
    assert {r["task"] for r in record["results"]} >= {"itt", "tot"}


def test_a_custom_arch_resolves_when_open_clip_is_already_imported(
    oc: Any, tiny: dict[str, Tiny], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its facts were remembered by an earlier process; this one has imported open_clip (a
    training script): the arch must be registered before open_clip's registry is asked."""
    config = tmp_path / "late-arch.json"
    config.write_text(json.dumps(TINY_CFG))
    model = spec(str(config), tiny[TINY].checkpoint, quick_gelu="false")
    first = OpenClipEncoder(model)  # remembers the facts
    registry = dict(oc.factory._MODEL_CONFIGS)
    monkeypatch.setattr(
        oc.factory, "_MODEL_CONFIGS", {k: v for k, v in registry.items() if k != first.arch}
    )  # fmt: skip  (as in a new process: the arch not registered)
    assert "open_clip" in sys.modules and oc.get_model_config(first.arch) is None
    again = OpenClipEncoder(model)
    assert again.arch == first.arch and oc.get_model_config(first.arch) is not None

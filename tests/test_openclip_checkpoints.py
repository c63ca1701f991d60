"""Local checkpoints of the `openclip:` backend in the forms they come in: a state dict,
``{"state_dict": ...}`` (what open_clip reads), and a training checkpoint
``{"model_state_dict": ..., "epoch": ...}`` — the form of BiVLC's released fine-tuned CLIPs
(BiVLC, App. E), with DDP's ``module.`` prefixes or without. Each gives the embeddings of the
model saved; a checkpoint of another arch is a ModelError.

A tiny open_clip arch (as in test_models_openclip) is registered here, randomly initialised.
Needs open_clip: skipped locally without it, a failure in CI.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders.backends import require
from builders.numeric import assert_close_to_reference
from lexsem.errors import ModelError
from lexsem.models.backends.openclip.checkpoints import training_state_dict
from lexsem.models.backends.openclip.encoder import OpenClipEncoder
from lexsem.models.backends.openclip.install import INSTALL_HINT
from lexsem.models.source import file_digest

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

ARCH = "lexsem-tiny-ckpt"
OTHER = "lexsem-tiny-ckpt-wide"


def _config(width: int) -> dict[str, Any]:
    return {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": width, "head_width": 16,
                       "patch_size": 16},
        "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": width, "heads": 2,
                     "layers": 1},
    }  # fmt: skip


TEXTS = ["a cat", "a small red dog chases the big blue ball", "two horses, one brown"]


def _images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (h, 40, 3), dtype=np.uint8)) for h in (32, 50)]


@pytest.fixture(scope="module")
def oc(tmp_path_factory: pytest.TempPathFactory) -> Any:
    try:
        import open_clip
    except Exception as exc:  # not installed, or a torch/torchvision mismatch
        require(False, f"open_clip does not import ({exc}); {INSTALL_HINT}")
        raise
    configs = tmp_path_factory.mktemp("openclip-ckpt-configs")
    (configs / f"{ARCH}.json").write_text(json.dumps(_config(32)))
    (configs / f"{OTHER}.json").write_text(json.dumps(_config(48)))
    open_clip.add_model_config(configs)
    return open_clip


def _model(oc: Any, arch: str, seed: int) -> tuple[Any, Any]:
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _, transform = oc.create_model_and_transforms(arch)
    return model.eval(), transform


@pytest.fixture(scope="module")
def tiny(oc: Any) -> tuple[Any, np.ndarray, np.ndarray]:
    """The model, and its own text and image embeddings (open_clip, directly)."""
    model, transform = _model(oc, ARCH, seed=3)
    with torch.no_grad():
        text = model.encode_text(oc.get_tokenizer(ARCH)(TEXTS)).numpy()
        image = model.encode_image(torch.stack([transform(im) for im in _images()])).numpy()
    return model, text, image


def _state(model: Any) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def _release(model: Any) -> dict[str, Any]:
    """A checkpoint as BiVLC's fine-tuning saves it: epoch, weights, optimizer state, loss."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)
    loss = model.logit_scale * 2.0  # a tensor with a grad_fn, as the last training loss is
    loss.backward()
    optimizer.step()  # lr 0: the weights stay as they are, the optimizer gets its state
    optimizer.zero_grad()
    return {
        "epoch": 9,
        "model_state_dict": _state(model),
        "optimizer_state_dict": optimizer.state_dict(),
        "loss": loss,
    }


FORMS = {
    "state dict": lambda m: _state(m),
    "state_dict key": lambda m: {"state_dict": _state(m), "epoch": 3},
    "model_state_dict": lambda m: {"model_state_dict": _state(m), "epoch": 3},
    "model_state_dict from DDP": lambda m: {
        "model_state_dict": {f"module.{k}": v for k, v in _state(m).items()}
    },
    "BiVLC release": _release,
}


def _spec(path: Path) -> str:
    return f"openclip:{ARCH}@{path}?quick_gelu=false"


@pytest.mark.parametrize("form", list(FORMS))
def test_every_checkpoint_form_gives_the_models_embeddings(
    tiny: tuple, tmp_path: Path, form: str
) -> None:
    model, want_text, want_image = tiny
    ckpt = tmp_path / "best_CLIP_TROHN-Img_9.pt"
    torch.save(FORMS[form](model), ckpt)
    enc = OpenClipEncoder(_spec(ckpt), device="cpu")
    text = enc.encode(TEXTS, batch_size=2)
    image = enc.encode_images(torch.stack([enc.preprocess(im) for im in _images()]))
    assert_close_to_reference(text, want_text)
    assert_close_to_reference(image, want_image)
    # identified by the file's bytes, whatever its form
    assert enc.fingerprint["model"] == {"source": "local", "file": file_digest(ckpt)}


def test_training_state_dict_reads_only_training_checkpoints(tiny: tuple, tmp_path: Path) -> None:
    model = tiny[0]
    for form, expect in [
        ("state dict", False),
        ("state_dict key", False),
        ("model_state_dict", True),
        ("model_state_dict from DDP", True),
    ]:
        ckpt = tmp_path / f"{form}.pt"
        torch.save(FORMS[form](model), ckpt)
        got = training_state_dict(ckpt)
        assert (got is not None) == expect, form
        if got is not None:
            assert list(got) == list(model.state_dict())
            assert all(torch.equal(got[k], v) for k, v in model.state_dict().items())
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    assert training_state_dict(garbage) is None  # left to open_clip's own error
    assert training_state_dict(tmp_path / "weights.safetensors") is None


def test_a_training_checkpoint_of_another_arch_is_a_model_error(
    oc: Any, tiny: tuple, tmp_path: Path
) -> None:
    wide, _ = _model(oc, OTHER, seed=0)
    ckpt = tmp_path / "wide.pt"
    torch.save({"model_state_dict": _state(wide), "epoch": 1}, ckpt)
    enc = OpenClipEncoder(_spec(ckpt), device="cpu")
    with pytest.raises(ModelError) as err:
        enc.encode(["a cat"])
    assert f"could not load open_clip model {enc.name!r} ({ARCH} from {ckpt})" in str(err.value)
    assert (
        f"its 'model_state_dict' does not fit {ARCH} (shape: positional_embedding (16, 48) "
        "for (16, 32), text_projection (48, 16) for (32, 16)" in str(err.value)
    )
    assert "in all)" in str(err.value) and len(str(err.value)) < 600
    # a weight missing (or one too many) is refused too: every weight must be loaded
    partial = _state(tiny[0])
    del partial["logit_scale"]
    torch.save({"model_state_dict": {**partial, "extra.weight": torch.zeros(1)}}, ckpt)
    with pytest.raises(ModelError, match=r"\(missing: logit_scale; unexpected: extra\.weight\)"):
        OpenClipEncoder(_spec(ckpt), device="cpu").encode(["a cat"])
    # the forms open_clip reads itself keep its error
    torch.save({"state_dict": _state(wide)}, ckpt)
    with pytest.raises(ModelError, match="could not load open_clip model"):
        OpenClipEncoder(_spec(ckpt), device="cpu").encode(["a cat"])


def test_a_training_checkpoint_in_bf16_matches_the_state_dict_in_bf16(
    tiny: tuple, tmp_path: Path
) -> None:
    """Loaded after the model is cast, the weights round as when open_clip loads them first."""
    plain, release = tmp_path / "plain.pt", tmp_path / "release.pt"
    torch.save(FORMS["state dict"](tiny[0]), plain)
    torch.save(FORMS["BiVLC release"](tiny[0]), release)
    encs = [OpenClipEncoder(_spec(p) + "&dtype=bf16", device="cpu") for p in (plain, release)]
    texts = [enc.encode(TEXTS) for enc in encs]
    np.testing.assert_array_equal(texts[0], texts[1])
    assert not np.allclose(texts[0], tiny[1], rtol=1e-6, atol=0)  # bf16 indeed

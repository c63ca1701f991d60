"""The two towers of a dual encoder as a trainable module, from a lexsem model backend.

Training starts from the same backend object evaluation uses (`openclip:` or `clip:` with a
CLIP-family model), so the trained module *is* the evaluated one: the Evaluator reads the
model's fingerprint every run, and a module whose weights changed gets its own cache entries
(`lexsem.models.weights`). `Towers` gives the differentiable pieces the loop needs — image and
text embeddings (L2-normalised; unnormalised as `image_features` / `text_features`, what the
artifact detectors of `lexsem.train.artifact_detector` read), the logit scale (exp applied),
the image preprocessing (the model's own evaluation transform) and the tokenizer — and saves a
checkpoint that the evaluation backends load as they are (`clip:folder`, or
`openclip:ARCH@ckpt.pt?quick_gelu=...`: the spec says the activation the model trained with,
as the checkpoint alone does not).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lexsem.errors import ModelError

__all__ = ["Towers", "towers_of"]


class Towers:
    """Base: `module` is the torch module trained (the backend's `torch_module()`); `encoder`
    the lexsem backend object."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.module = encoder.torch_module()

    def preprocess(self, image: Any) -> Any:
        return self.encoder.preprocess(image)

    def tokens(self, texts: Sequence[str]) -> Any:
        raise NotImplementedError

    def image_features(self, pixels: Any) -> Any:
        """The unnormalised image embeddings (the projected CLS token)."""
        raise NotImplementedError

    def text_features(self, tokens: Any) -> Any:
        """The unnormalised text embeddings (the projected EOT token)."""
        raise NotImplementedError

    def embed_images(self, pixels: Any) -> Any:
        return _normed(self.image_features(pixels))

    def embed_texts(self, tokens: Any) -> Any:
        return _normed(self.text_features(tokens))

    def logit_scale(self) -> Any:
        return self.module.logit_scale.exp()

    def save(self, path: Path, state: dict[str, Any]) -> str:
        """Write weights loadable by the evaluation backend at `path`; its model spec."""
        raise NotImplementedError


def _normed(x: Any) -> Any:
    import torch.nn.functional as F

    return F.normalize(x.float(), dim=-1)


class OpenClipTowers(Towers):
    """An open_clip CLIP (`openclip:` backend)."""

    def tokens(self, texts: Sequence[str]) -> Any:
        return self.encoder.tokenizer([self.encoder.spec.format_text(t) for t in texts])

    def image_features(self, pixels: Any) -> Any:
        return self.module.encode_image(pixels)

    def text_features(self, tokens: Any) -> Any:
        return self.module.encode_text(tokens)

    def save(self, path: Path, state: dict[str, Any]) -> str:
        import torch

        from lexsem.atomic import atomic_path

        with atomic_path(path) as tmp:
            torch.save({"state_dict": state}, tmp)
        spec = self.encoder.spec
        arch = str(spec.config_file) if spec.config_file is not None else spec.arch
        # the activation the model trained with, said: a checkpoint's is unknown otherwise
        options = {**spec.options, "quick_gelu": str(bool(self.encoder.quick_gelu)).lower()}
        query = "&".join(f"{k}={v}" for k, v in sorted(options.items()))
        return f"openclip:{arch}@{path}?{query}"


class HFClipTowers(Towers):
    """A transformers CLIP model (`clip:` backend, CLIP family: one softmax contrastive loss)."""

    def tokens(self, texts: Sequence[str]) -> Any:
        return dict(self.encoder.tokenize(self.encoder.format_texts(list(texts))))

    def image_features(self, pixels: Any) -> Any:
        return self.encoder.image_features(self.module, {"pixel_values": pixels})

    def text_features(self, tokens: Any) -> Any:
        return self.encoder.text_features(self.module, tokens)

    def save(self, path: Path, state: dict[str, Any]) -> str:
        """A model folder: the weights (`save_pretrained` of `state`) and the source folder's
        tokenizer and processor files."""
        from lexsem.atomic import replace_dir

        tmp = path.with_name(path.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        self.module.save_pretrained(tmp, state_dict=state)
        src = Path(self.encoder.source.path)
        for f in src.iterdir():
            if f.is_file() and not (tmp / f.name).exists() and not _weights_file(f):
                shutil.copy2(f, tmp / f.name)
        replace_dir(tmp, path, path.with_name(path.name + ".old"))
        return f"clip:{path}"


def _weights_file(f: Path) -> bool:
    return f.suffix in {".safetensors", ".bin", ".pt", ".pth"} or f.name.endswith(".index.json")


def towers_of(encoder: Any) -> Towers:
    """The trainable towers of a loaded lexsem dual encoder."""
    from lexsem.models.backends.openclip.encoder import OpenClipEncoder

    if isinstance(encoder, OpenClipEncoder):
        return OpenClipTowers(encoder)
    family = getattr(getattr(encoder, "family", None), "name", None)
    if family == "clip":
        return HFClipTowers(encoder)
    what = family or type(encoder).__name__
    raise ModelError(
        f"{getattr(encoder, 'name', encoder)!r}: lexsem trains open_clip models (openclip:) and "
        f"transformers CLIP models (clip: with a CLIP checkpoint), not {what}"
    )

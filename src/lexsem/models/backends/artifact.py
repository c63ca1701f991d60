"""`artifact:` backend: synthetic-vs-natural detectors as a retrieval system (BiVLC, §5.4 and
Table 5), a pair scorer (`PairScorer`) for `lexsem eval -m artifact:DIR`.

**`artifact:DIR`** — DIR is a detector folder written by `lexsem train-detector`
(`lexsem.models.detector_heads`: a text and an image head on one base CLIP model). Each text
and image gets P(generated) from its head; with u = p - 0.5 (an exact 0.5 counts as natural,
as ``round`` rounds it to 0 in the reference), the score of a pair is

    s(image, caption) = u_image * u_caption

so an image detected natural (u < 0) prefers the caption rated more natural (lower p), an
image detected generated the caption rated more generated; a caption chooses between images
the same way. That is BiVLC's rule "detect the query's type, pick the candidate the other
detector rates as the same type" as Winoground's comparisons read it (`lexsem.tasks.quad`).
The reference (`Detector_evaluation_BiVLC.py`) also requires the query's detection to be
*correct* (it knows which image is natural); a pair score cannot know that, so an item whose
query is misdetected *and* whose candidates are ranked the wrong way round counts as solved
here and not there (docs/fidelity.md, "Artifact baselines"; `lexsem.train.artifact_eval`
computes the reference's numbers exactly).

Option ``images``: ``detect`` (default; the image head decides the image's type) or
``natural`` (every image counts as natural: only the text head decides, as the reference's
`Detector_evaluation_SugarCrepe.py` scores SugarCrepe, whose images are all natural).
Scores are float64 products of float32 probabilities, stored as float32 by the engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.lazy import FINGERPRINT_VERSION, LazyModel
from lexsem.models.options import COMMON, Option, expected

__all__ = ["ArtifactScorer", "pair_score"]

IMAGE_MODES = ("detect", "natural")
#: What u = p - 0.5 becomes when p is exactly 0.5: a tiny negative (natural), below every
#: float32 probability's distance from 0.5, a power of two (products stay exact in float64).
HALF = -(2.0**-40)


def _images_mode(text: str) -> str:
    if text not in IMAGE_MODES:
        raise ValueError(expected(IMAGE_MODES))
    return text


def centred(probs: np.ndarray) -> np.ndarray:
    """p - 0.5 in float64, an exact 0.5 as `HALF` (counted natural)."""
    u = np.asarray(probs, dtype=np.float64) - 0.5
    return np.where(u == 0.0, HALF, u)


def pair_score(text_probs: np.ndarray, image_probs: np.ndarray) -> np.ndarray:
    """The score of each (image, caption) pair from P(generated) of each side (module doc)."""
    return centred(text_probs) * centred(image_probs)


class ArtifactScorer(LazyModel):
    """A text and an image detector on one base CLIP model, scoring pairs (module doc)."""

    backend: ClassVar[str] = "artifact"
    description = "synthetic-vs-natural detectors (BiVLC §5.4) as a retrieval system"
    options: ClassVar[Mapping[str, Option]] = {
        "dtype": COMMON["dtype"],
        "images": Option(_images_mode, "detect"),
    }

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        kwargs.pop("max_length", None)  # the base model's own limit
        super().__init__(spec, **kwargs)
        from lexsem.models.detector_heads import DETECTOR_KINDS, load_head

        folder = Path(self.source.path)
        self.heads = {kind: load_head(folder, kind) for kind in DETECTOR_KINDS}
        bases = {h.base_model for h in self.heads.values()}
        if len(bases) != 1:
            raise ModelError(
                f"{folder}: the text and image detectors are on different models "
                f"({', '.join(sorted(bases))}); train both on one (lexsem train-detector)"
            )
        self.images_mode = str(self.spec.get("images"))
        self.base = self._base_model(bases.pop())

    def _base_model(self, spec: str) -> Any:
        from lexsem.models.factory import load_model

        return load_model(spec, device=self._requested_device, dtype="fp32",
                          offline=self._offline)  # fmt: skip

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The heads' weights, the base model's fingerprint and the image mode."""
        from lexsem.models.detector_heads import head_paths

        digest = hashlib.sha256()
        for kind in sorted(self.heads):
            digest.update(head_paths(Path(self.source.path), kind)[0].read_bytes())
        return {
            "fingerprint_version": FINGERPRINT_VERSION,
            "backend": self.backend,
            "heads_sha256": digest.hexdigest(),
            "base": self.base.fingerprint,
            "images": self.images_mode,
        }

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["base_model"] = self.base.spec_string
        return out

    def preprocess(self, image: Any) -> Any:
        return self.base.preprocess(image)

    def _load(self) -> Any:
        module = self.base.torch_module()
        module.eval()
        return module

    def _text_features(self, texts: list[str]) -> Any:
        """Unnormalised text embeddings through the base model's public tower API (as
        `lexsem.train.towers` reads them in training)."""
        module, device = self._ensure_loaded(), self.base.device
        if hasattr(self.base, "text_features"):  # transformers dual encoders (clip:)
            tokens = self.base.tokenize(self.base.format_texts(texts))
            return self.base.text_features(module, {k: v.to(device) for k, v in tokens.items()})
        tokens = self.base.tokenizer([self.base.spec.format_text(t) for t in texts])
        return module.encode_text(tokens.to(device))  # open_clip

    def _image_features(self, pixels: Any) -> Any:
        module, device = self._ensure_loaded(), self.base.device
        if hasattr(self.base, "image_features"):
            return self.base.image_features(module, {"pixel_values": pixels.to(device)})
        return module.encode_image(pixels.to(device))

    def text_probs(self, texts: Sequence[str]) -> np.ndarray:
        """P(generated) of each text (float32)."""
        import torch

        self._ensure_loaded()  # outside no_grad: the weights stay ordinary tensors
        with torch.no_grad():
            feats = self._text_features(list(texts)).float().cpu()
        return self.heads["text"].probs(feats).numpy()

    def image_probs(self, images: Any) -> np.ndarray:
        """P(generated) of each stacked preprocessed image (float32)."""
        import torch

        if isinstance(images, list):
            images = torch.stack(list(images))
        self._ensure_loaded()
        with torch.no_grad():
            feats = self._image_features(images).float().cpu()
        return self.heads["image"].probs(feats).numpy()

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        text_p = self.text_probs(texts)
        if self.images_mode == "natural":
            image_p = np.zeros(len(text_p), dtype=np.float32)
        else:
            image_p = self.image_probs(images)
        return pair_score(text_p, image_p)

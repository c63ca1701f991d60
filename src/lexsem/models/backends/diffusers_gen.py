"""`diffusers:` backend: a local text-to-image pipeline of the `diffusers` library (needs
``lexsem[images]``), an image generator (`lexsem.models.image_gen`).

Spec: `diffusers:MODEL?unet=UNET&steps=50&guidance=5&height=1024&width=1024&variant=fp16`
(and `dtype`, `revision`, `trust_remote_code`). MODEL is a pipeline folder
(``model_index.json`` and its component folders) or a Hugging Face Hub id; `unet` replaces
the pipeline's UNet with another one (a folder, or a hub id whose ``unet/`` subfolder holds
it, as BiVLC swapped in the DPO UNet). `variant`: the weight files'
variant (``fp16``: ``*.fp16.safetensors``) of the pipeline's own components. `steps`:
``num_inference_steps``; `guidance`: ``guidance_scale`` (unset: the pipeline's default);
`height`, `width`: the generated size (unset: the pipeline's default). `generate` makes the
images it is given in one call of the pipeline (the engine sends batches of them).

BiVLC's generator (BiVLC, §3 step 2 and its `BiVLC_img_generation.py`): SDXL base with the
SDXL-DPO UNet, guidance 5, 50 steps, fp16, images resized to 512 px (the `size` of each
request)::

    diffusers:stabilityai/stable-diffusion-xl-base-1.0?unet=mhdang/dpo-sdxl-text2image-v1&guidance=5&steps=50&variant=fp16&dtype=fp16

(`BIVLC_SDXL_DPO`). Each image has its own `torch.Generator` on the CPU seeded with its
request's seed (`image_seed`), so a batch of images equals the images made one at a time (up to
the kernels' rounding) and an image does not depend on the device's random generator.

The fingerprint holds the pipeline's and the UNet's identity (folder digest, or hub id and
commit), the dtype, the variant, steps, guidance and size: images of one setting are never
served for another.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.image_gen import ImageRequest, png_bytes
from lexsem.models.lazy import LazyModel
from lexsem.models.options import COMMON, Option, positive_int
from lexsem.models.source import resolve_source

__all__ = ["BIVLC_SDXL_DPO", "DiffusersGenerator"]

BIVLC_SDXL_DPO = (
    "diffusers:stabilityai/stable-diffusion-xl-base-1.0?unet=mhdang/dpo-sdxl-text2image-v1"
    "&guidance=5&steps=50&variant=fp16&dtype=fp16"
)


def _number(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("expected a finite number")
    return value


class DiffusersGenerator(LazyModel):
    """A diffusers text-to-image pipeline, seeded per image (see the module doc)."""

    backend: ClassVar[str] = "diffusers"
    description = "a local diffusers text-to-image pipeline: an image generator (lexsem build)"
    options: ClassVar[Mapping[str, Option]] = {
        **{k: v for k, v in COMMON.items() if k != "max_length"},
        "unet": Option(str),
        "variant": Option(str),
        "steps": positive_int(50),
        "guidance": Option(_number),
        "height": positive_int(),
        "width": positive_int(),
    }
    option_hints: ClassVar[Mapping[str, str]] = {
        "max_length": "an image generator's prompts are cut by its own tokenizers",
    }
    makes_images = True

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        kwargs.pop("max_length", None)
        super().__init__(spec, **kwargs)
        self.steps = int(self.spec.get("steps"))
        guidance = self.spec.get("guidance")
        self.guidance = None if guidance is None else float(guidance)
        self.height, self.width = self.spec.get("height"), self.spec.get("width")
        self.variant = self.spec.get("variant")
        unet = self.spec.get("unet")
        self.unet_source = (
            None
            if unet is None
            else resolve_source(str(unet), offline=self._offline, backend=self.backend)
        )
        if not (Path(self.source.path) / "model_index.json").is_file():
            raise ModelError(
                f"{self.name}: {self.source.path} is not a diffusers pipeline (no model_index.json)"
            )

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "unet": None if self.unet_source is None else self.unet_source.identity(),
            "variant": self.variant,
            "steps": self.steps,
            "guidance": self.guidance,
            "height": self.height,
            "width": self.width,
            "generator": "torch.Generator(cpu) per image",
        }

    def request_body(self, request: ImageRequest) -> dict[str, Any]:
        """The request as keyed: prompt, index, seed, size and extra parameters."""
        return request.keyed()

    def _load(self) -> Any:
        try:
            from diffusers import DiffusionPipeline, UNet2DConditionModel
        except ImportError as exc:
            raise ModelError(
                f"{self.name}: the diffusers: backend needs the diffusers package "
                "(pip install 'lexsem[images]')"
            ) from exc
        dtype = torch_dtype(self.dtype)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # `torch_dtype`'s new name
                pipe = DiffusionPipeline.from_pretrained(
                    str(self.source.path), torch_dtype=dtype, variant=self.variant,
                    local_files_only=True, trust_remote_code=self.trust_remote_code,
                )  # fmt: skip
                if self.unet_source is not None:
                    folder = Path(self.unet_source.path)
                    sub = "unet" if (folder / "unet" / "config.json").is_file() else None
                    pipe.unet = UNet2DConditionModel.from_pretrained(
                        str(folder), subfolder=sub, torch_dtype=dtype, local_files_only=True
                    )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise self._load_error(exc) from exc
        pipe.to(self.device)
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def _load_error(self, exc: Exception) -> ModelError:
        return ModelError(f"could not load the pipeline {self.name!r}: {exc}")

    def generate(self, requests: Sequence[ImageRequest]) -> list[bytes]:
        """PNG bytes of each request's image, in order: one pipeline call per set of extra
        parameters (all of them, usually)."""
        import torch

        pipe = self._ensure_loaded()
        out: dict[int, bytes] = {}
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            if r.seed is None:
                raise ModelError(f"{self.name}: image request {r.prompt[:40]!r} has no seed")
            groups.setdefault(json.dumps(dict(r.params), sort_keys=True), []).append(i)
        for chunk in groups.values():
            asked = [requests[i] for i in chunk]
            call: dict[str, Any] = {
                "prompt": [r.prompt for r in asked],
                "num_images_per_prompt": 1,
                "num_inference_steps": self.steps,
                "generator": [torch.Generator("cpu").manual_seed(int(r.seed or 0)) for r in asked],
                **dict(asked[0].params),
            }
            if self.guidance is not None:
                call["guidance_scale"] = self.guidance
            if self.height is not None:
                call["height"] = self.height
            if self.width is not None:
                call["width"] = self.width
            with torch.inference_mode():
                images = pipe(**call).images
            for i, r, image in zip(chunk, asked, images, strict=True):
                out[i] = png_bytes(image, r.size)
        return [out[i] for i in range(len(requests))]

"""What an image generator is asked and gives back: an `ImageRequest` (one image: a prompt, which
of the K images of that prompt it is, its seed, the size it is saved at) and the protocol every
image-generator backend implements (`diffusers:` a local pipeline, `openai-image:` an
OpenAI-compatible image API; BiVLC, §3 step 2: K images per hard negative caption).

Every generated image is one request, so it can be stored, counted and replayed on its own
(`lexsem.engine.image_gen`). Its seed: `image_seed(seed, prompt, index)`, a number drawn from
the sha256 of the recipe's seed, the prompt and the image's index, so the image of a (prompt,
index) is the same whichever batch or order it is generated in. Images are returned as PNG bytes,
resized (bicubic, as PIL's `Image.resize` does by default) to `size` x `size` pixels when a size
is asked for.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["ImageGenerator", "ImageRequest", "image_seed", "png_bytes"]

SEED_BITS = 63  # torch.Generator.manual_seed takes any 64-bit value; keep it positive


@dataclass(frozen=True)
class ImageRequest:
    """One image to generate: `prompt` (the text sent, suffix included), `index` (which of the
    K images of the prompt), `seed` (None: the build fills in `image_seed`), `size` (the side
    of the square image saved, in pixels; None: as generated), `params`: extra generation
    parameters (sent and keyed)."""

    prompt: str
    index: int = 0
    seed: int | None = None
    size: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def keyed(self) -> dict[str, Any]:
        """What of the request is part of its store key (with the model's fingerprint)."""
        return {
            "prompt": self.prompt,
            "index": self.index,
            "seed": self.seed,
            "size": self.size,
            "params": dict(self.params),
        }


def image_seed(seed: int, prompt: str, index: int) -> int:
    """The seed of image `index` of `prompt` in a build seeded `seed`: the first 8 bytes of
    sha256(``"{seed}\\0{prompt}\\0{index}"``), big-endian, below 2**63."""
    digest = hashlib.sha256(f"{seed}\0{prompt}\0{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << SEED_BITS) - 1)


def png_bytes(image: Any, size: int | None) -> bytes:
    """A PIL image as PNG bytes, resized to `size` x `size` (bicubic) when `size` is given."""
    from PIL import Image

    if size is not None and image.size != (size, size):
        image = image.resize((size, size), Image.Resampling.BICUBIC)
    if image.mode not in ("RGB", "RGBA", "L"):
        image = image.convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


@runtime_checkable
class ImageGenerator(Protocol):
    """Makes images from prompts. `fingerprint`: everything besides the request that changes an
    image (weights, steps, guidance, endpoint, ...). `request_body(request)`: the request as
    keyed and sent (a JSON object). A local generator implements `generate(requests)` (PNG
    bytes per request, a batch at a time); an API implements `send(client, body)` (one
    request: PNG bytes and the response without the image)."""

    name: str
    makes_images: bool

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def request_body(self, request: ImageRequest) -> dict[str, Any]: ...


def is_local(model: Any) -> bool:
    """Whether `model` generates on this machine (`generate`) rather than over HTTP (`send`)."""
    return callable(getattr(model, "generate", None))


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """`items` in consecutive chunks of at most `size`."""
    step = max(1, int(size))
    return [items[i : i + step] for i in range(0, len(items), step)]

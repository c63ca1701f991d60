"""Decode profiles: how the bytes of an image become the PIL image a model's `preprocess` sees.

The reference evaluation scripts of the benchmarks do not decode alike, and the difference
changes per-item scores on some files (docs/fidelity.md, "Image decoding per benchmark"):

- **EXIF orientation.** `datasets` applies it when it decodes an `Image` feature (since
  datasets 2.19.0: `Image.decode_example` calls `PIL.ImageOps.exif_transpose` when the file
  has an Orientation tag); a plain `PIL.Image.open(path)` does not.
- **When the image becomes RGB.** Most scripts call ``.convert("RGB")`` before the model's
  preprocessing. SugarCrepe's and SugarCrepe++'s open_clip scripts hand the image as opened
  (RGBA, CMYK, P, L, I;16, ...) to open_clip's eval transform, which resizes and centre-crops
  in that mode and converts to RGB only then (`_convert_to_rgb` / `MaybeConvertMode` after
  `CenterCrop` in open_clip's ``transform.py``): for palette, transparent, 1-bit, 16-bit and
  some CMYK files the pixels differ.

A `DecodeProfile` names one pipeline: `exif_transpose` and `rgb` (``"first"``: convert to RGB
before `preprocess`; ``"model"``: hand the raw-mode image to `preprocess`). Only a model that
declares ``accepts_raw_mode = True`` (its `preprocess` converts to RGB itself, after resizing,
as open_clip's transform does) is given raw-mode images; any other model gets the image
converted first (`DecodeProfile.for_model`). That is also what the references do for such
models: SugarCrepe++'s transformers / LAVIS scripts convert first, several transformers image
processors (ALIGN, FLAVA, ViLT, SigLIP 2) refuse non-RGB input, and those that accept it
composite transparency onto white, which no reference does.

Every profile also (`decode`): refuses an image over the pixel limit before decoding its pixels
(`lexsem.images.pixels`: an `ImageError` ``"too-large"``, never Pillow's decompression-bomb
warning), and scales 16-bit greyscale images (``I;16``, ``I``) to 8 bits instead of letting
Pillow clip them to white (`lexsem.images.depth`).

Two decodes of the same bytes that may give other pixels never share a cache entry:
`DecodeProfile.key_tag` is prepended to the bytes before they are hashed (see
`lexsem.engine.keys.image_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from lexsem.images.depth import to_8bit
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS, open_image
from lexsem.images.refs import ImageError

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "DEFAULT",
    "HF_DATASETS",
    "OPEN_CLIP_RAW",
    "PRESETS",
    "RAW_MODE_ATTR",
    "DecodeProfile",
    "ProfileSpec",
    "Profiles",
    "accepts_raw_mode",
    "decode",
    "decode_image",
    "flag_profile",
    "get_profile",
    "profile_lookup",
]

RgbWhen = Literal["first", "model"]

#: The attribute by which a model says that its `preprocess` takes a PIL image of any mode and
#: converts it to RGB itself, after resizing and cropping (open_clip's eval transform does).
RAW_MODE_ATTR = "accepts_raw_mode"

# Tags prepended to the image bytes before hashing: no image file starts with one. An RGB-first
# profile's tag depends on its EXIF choice alone (none with EXIF applied), so every RGB-first
# profile, named or given by the bare `exif_transpose` flag (`flag_profile`), shares its keys.
_RGB_FIRST_TAGS = {True: b"", False: b"lexsem:no-exif-transpose\x00"}


@dataclass(frozen=True)
class DecodeProfile:
    """One way of decoding image bytes for a model (frozen, picklable).

    name: a short label, recorded with the run (e.g. ``"open_clip_raw"``).
    exif_transpose: apply the EXIF orientation tag (as `datasets` >= 2.19.0 does).
    rgb: ``"first"`` — ``.convert("RGB")`` right after decoding; ``"model"`` — the image goes to
        `preprocess` in the mode the file decodes to, when the model accepts raw modes.
    reference: the reference code this pipeline follows, and the order of operations.
    """

    name: str
    exif_transpose: bool
    rgb: RgbWhen
    reference: str = ""

    def __post_init__(self) -> None:
        if self.rgb not in ("first", "model"):
            raise ValueError(f"rgb must be 'first' or 'model', not {self.rgb!r}")
        if not self.name:
            raise ValueError("a decode profile needs a name")

    @property
    def key_tag(self) -> bytes:
        """The bytes prepended to an image before hashing it under this profile."""
        if self.rgb == "first":
            return _RGB_FIRST_TAGS[self.exif_transpose]
        exif = "exif-transpose" if self.exif_transpose else "no-exif-transpose"
        return f"lexsem:decode:{exif};rgb-model\x00".encode()

    def with_exif(self, exif_transpose: bool) -> DecodeProfile:
        """This profile with EXIF orientation forced on or off (a run-wide override)."""
        if exif_transpose == self.exif_transpose:
            return self
        suffix = "+exif" if exif_transpose else "-exif"
        return replace(self, name=self.name + suffix, exif_transpose=exif_transpose)

    def for_model(self, raw_ok: bool) -> DecodeProfile:
        """The profile actually applied for a model: RGB first unless it accepts raw modes."""
        if self.rgb == "model" and not raw_ok:
            return replace(self, rgb="first")
        return self

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for run records."""
        return {"name": self.name, "exif_transpose": self.exif_transpose, "rgb": self.rgb}


DEFAULT = DecodeProfile(
    "default",
    exif_transpose=False,
    rgb="first",
    reference=(
        "Image.open(path).convert('RGB'), then the model's preprocess; no EXIF rotation. ARO: "
        "mertyg/vision-language-models-are-bows, dataset_zoo/aro_datasets.py (VG: then "
        ".crop(bbox)); SugarCrepe++'s transformers / LAVIS scripts: Sri-Harsha/scpp, "
        "VLMs/test_ALIGN.py, test_FLAVA.py, test_BLIP.py"
    ),
)
OPEN_CLIP_RAW = DecodeProfile(
    "open_clip_raw",
    exif_transpose=False,
    rgb="model",
    reference=(
        "Image.open(path) handed as opened to open_clip's eval transform: Resize, CenterCrop, "
        "then convert('RGB'), ToTensor, Normalize; no EXIF rotation. SugarCrepe: "
        "RAIVNLab/sugar-crepe, main_eval.py (evaluate, text_retrieval); SugarCrepe++: "
        "Sri-Harsha/scpp, VLMs/test_Variants_CLIP.py"
    ),
)
HF_DATASETS = DecodeProfile(
    "hf_datasets",
    exif_transpose=True,
    rgb="first",
    reference=(
        "a `datasets` Image feature (decode_example: PIL open, load, exif_transpose when the "
        "file has an Orientation tag — datasets >= 2.19.0), then .convert('RGB'), then the "
        "model's preprocess. BiVLC: IMirandaM/BiVLC, src/CLIP_fine_tuning/CLIP_utils.py "
        "(dataset, 'evaluation'; requirements.txt pins datasets 2.19.2); Winoground: the CLIP "
        "example published with the dataset (load_dataset('facebook/winoground'), "
        "example['image_0'].convert('RGB'), CLIPProcessor)"
    ),
)

#: The named presets a benchmark's ``decode`` attribute may name.
PRESETS: dict[str, DecodeProfile] = {p.name: p for p in (DEFAULT, OPEN_CLIP_RAW, HF_DATASETS)}

ProfileSpec: TypeAlias = "DecodeProfile | str"
Profiles: TypeAlias = "ProfileSpec | Mapping[str, ProfileSpec] | None"


def get_profile(spec: ProfileSpec) -> DecodeProfile:
    """A profile, or the preset of that name (a `ValueError` names the known ones)."""
    if isinstance(spec, DecodeProfile):
        return spec
    try:
        return PRESETS[spec]
    except (KeyError, TypeError):
        known = ", ".join(sorted(PRESETS))
        raise ValueError(f"unknown decode profile {spec!r}; known: {known}") from None


def flag_profile(exif_transpose: bool) -> DecodeProfile:
    """The profile of a bare `exif_transpose` flag (no profile given): RGB first, the EXIF
    orientation applied as the flag says (`DEFAULT` with that EXIF choice)."""
    return DEFAULT.with_exif(exif_transpose)


def accepts_raw_mode(model: object) -> bool:
    """True when `model` declares that its `preprocess` takes raw-mode images."""
    return getattr(model, RAW_MODE_ATTR, False) is True


def profile_lookup(
    profiles: Profiles, exif_transpose: bool | None, raw_ok: bool
) -> Callable[[str], DecodeProfile]:
    """ref -> the profile applied to it for a model (`raw_ok`: it accepts raw modes).

    `profiles`: one profile (or preset name) for every reference, a mapping ref -> profile
    (every reference must be in it), or None — then `flag_profile(exif_transpose)`, EXIF on
    when `exif_transpose` is None. With profiles, a boolean `exif_transpose` overrides the EXIF
    choice of every profile and None leaves each as it is.
    """
    if profiles is None:
        fixed = flag_profile(True if exif_transpose is None else exif_transpose)
        return lambda ref: fixed

    def applied(spec: ProfileSpec) -> DecodeProfile:
        p = get_profile(spec)
        if exif_transpose is not None:
            p = p.with_exif(exif_transpose)
        return p.for_model(raw_ok)

    if isinstance(profiles, (DecodeProfile, str)):
        one = applied(profiles)
        return lambda ref: one
    memo: dict[ProfileSpec, DecodeProfile] = {}

    def lookup(ref: str) -> DecodeProfile:
        try:
            spec = profiles[ref]
        except KeyError:
            raise ValueError(f"no decode profile given for image {ref!r}") from None
        if spec not in memo:
            memo[spec] = applied(spec)
        return memo[spec]

    return lookup


def decode(
    data: bytes,
    profile: DecodeProfile,
    *,
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ref: str = "<image bytes>",
) -> Image:
    """`data` decoded as `profile` says, fully loaded.

    As `datasets`' `Image.decode_example`: open, load, apply the EXIF orientation when asked
    (`ImageOps.exif_transpose`: a no-op copy without an Orientation tag); then ``"first"``
    converts to RGB, ``"model"`` keeps the decoded mode (RGBA, CMYK, P, L, ...). Before any
    pixel is decoded, an image over `max_pixels` raises an `ImageError` (``"too-large"``)
    naming `ref`; a 16-bit greyscale image becomes 8-bit ``L`` (`lexsem.images.depth`) in
    every profile. Bytes that are no image Pillow decodes (empty, text, a truncated file) raise
    an `ImageError` (``"undecodable"``) naming `ref`, whatever Pillow raised.
    """
    from PIL import Image as PILImage
    from PIL import ImageOps

    try:
        image = open_image(data, max_pixels, ref)
        image.load()
        if profile.exif_transpose:
            image = ImageOps.exif_transpose(image)
        image = to_8bit(image)
        return image.convert("RGB") if profile.rgb == "first" else image
    except ImageError:
        raise
    except PILImage.DecompressionBombError as exc:  # a frame / tile over Pillow's own limit
        raise ImageError(f"image {ref!r}: {exc}", ref=ref, reason="too-large") from None
    except Exception as exc:  # Pillow raises many kinds for bytes it cannot decode
        why = "it is empty (0 bytes)" if not data else f"{type(exc).__name__}: {exc}"
        raise ImageError(
            f"image {ref!r} cannot be decoded: {why}", ref=ref, reason="undecodable"
        ) from None


def decode_image(
    data: bytes,
    *,
    exif_transpose: bool = True,
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ref: str = "<image bytes>",
) -> Image:
    """Decode image bytes to an RGB PIL image, fully loaded (`decode`: bytes that are no image,
    empty or truncated, raise an `ImageError` naming `ref`); with `exif_transpose` the EXIF
    orientation is applied (`flag_profile`)."""
    return decode(data, flag_profile(exif_transpose), max_pixels=max_pixels, ref=ref)

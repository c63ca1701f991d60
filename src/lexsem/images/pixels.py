"""The pixel limit: an image larger than the limit is refused before its pixels are decoded.

Decoding needs about ``width × height × bands`` bytes, and converting and transposing make
copies, so peak memory is about three times that — a 12000×12000 file of a few kilobytes asks
for more than a gigabyte. The benchmarks' real images are far below the limit: COCO 2017 at
most 640×640 (0.4 MP), Flickr30k at most 500 px a side, Visual Genome and BiVLC (COCO and
generated images) around one megapixel, Winoground's 800 images 369 MB in all (0.46 MB a file:
photos of a few megapixels). `DEFAULT_MAX_IMAGE_PIXELS` (40 MP) leaves ten times that, and
camera photos (24 MP, 36 MP) pass too; it is raised with ``--max-image-pixels`` /
`EvalConfig.max_image_pixels` / ``ImageStore(max_pixels=...)``.

`open_image` reads the header only, checks ``width × height`` against the limit and raises an
`ImageError` (reason ``"too-large"``, skippable with ``--skip-bad-images``) naming the image and
the option. It opens the file as `PIL.Image.open` does (same plugins, same order) but without
Pillow's own decompression-bomb check (`Image.MAX_IMAGE_PIXELS`: a warning above 89.5 MP, an
error above 179 MP), which lexsem's limit replaces: the user sees lexsem's error, never Pillow's
warning, and a limit raised above Pillow's applies as given. No global state of Pillow (its
limit, the warning filters) is touched, so this is safe in threads.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING

from lexsem.images.refs import ImageError

if TYPE_CHECKING:
    from PIL.ImageFile import ImageFile

__all__ = [
    "DEFAULT_MAX_IMAGE_PIXELS",
    "MAX_PIXELS_OPTION",
    "check_pixels",
    "open_image",
    "too_large",
]

#: The default limit: 40 megapixels (e.g. 8000×5000).
DEFAULT_MAX_IMAGE_PIXELS = 40_000_000

#: How a user raises the limit, named in the error.
MAX_PIXELS_OPTION = "--max-image-pixels N (EvalConfig.max_image_pixels / ImageStore(max_pixels=N))"

_NOT_THIS_FORMAT = (SyntaxError, IndexError, TypeError, struct.error)


def too_large(ref: str, size: tuple[int, int], max_pixels: int) -> ImageError:
    """The error for an image of `size` (width, height) over `max_pixels`."""
    w, h = size
    return ImageError(
        f"image {ref!r} is {w}×{h} = {w * h:,} pixels, more than the limit of {max_pixels:,} "
        f"(decoding it would take about {_in_bytes(3 * 3 * w * h)}); raise the limit with "
        f"{MAX_PIXELS_OPTION}, or skip such images with --skip-bad-images",
        ref=ref,
        reason="too-large",
    )


def _in_bytes(n: int) -> str:
    """`n` bytes in the largest unit that leaves at least 1 (bytes, KiB, MiB, GiB, TiB):
    two significant digits below 10 (`1.4 KiB`), whole units above (`343 MiB`)."""
    units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
    power = 0
    while power < len(units) - 1 and n >= 1024 ** (power + 1):
        power += 1
    value = n / 1024**power
    shown = f"{value:.1f}" if power and value < 10 else f"{value:,.0f}"
    return f"{shown} {units[power]}"


def check_pixels(size: tuple[int, int], max_pixels: int, ref: str) -> None:
    """Raise `too_large` when ``width × height`` of `size` is over `max_pixels`."""
    w, h = size
    if max(1, w) * max(1, h) > max_pixels:
        raise too_large(ref, size, max_pixels)


def _try_plugins(fp: io.BytesIO, prefix: bytes, formats: list[str]) -> ImageFile | None:
    """The first plugin of `formats` that accepts and opens `fp` (as `Image.open` tries them)."""
    from PIL import Image

    for fmt in formats:
        factory, accept = Image.OPEN[fmt]
        accepted = not accept or accept(prefix)
        if isinstance(accepted, str) or not accepted:
            continue
        fp.seek(0)
        try:
            return factory(fp, "")
        except _NOT_THIS_FORMAT:
            continue
    return None


def _open_header(data: bytes) -> ImageFile:
    """`PIL.Image.open(io.BytesIO(data))` without Pillow's decompression-bomb check."""
    from PIL import Image, UnidentifiedImageError

    fp = io.BytesIO(data)
    prefix = data[:16]
    tried: set[str] = set()
    for load_plugins in (Image.preinit, Image.init):
        load_plugins()
        formats = [f for f in Image.ID if f not in tried]
        tried.update(formats)
        image = _try_plugins(fp, prefix, formats)
        if image is not None:
            return image
    raise UnidentifiedImageError("cannot identify image file")


def open_image(data: bytes, max_pixels: int, ref: str = "<image bytes>") -> ImageFile:
    """The image in `data`, opened (header read, pixels not yet decoded) and checked against
    `max_pixels`; an `ImageError` (``"too-large"``) naming `ref` beyond it."""
    image = _open_header(data)
    check_pixels(image.size, max_pixels, ref)
    return image

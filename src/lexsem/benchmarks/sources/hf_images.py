"""The images embedded in Hugging Face datasets, served lazily by `mem:` reference.

Images are not decoded when items are loaded. Each item names its images by ref,
`mem:<dataset>/<split>/<row>/<column>` (`<dataset>` is the lexsem key, e.g. `bivlc`; `<row>` the
row number in file order, which is the Hub's row order), and the loader returns an
`HFImageStore`: a lazy mapping ref -> encoded image bytes (the PNG/JPEG bytes of the dataset's
Image feature, as stored). Bytes are read on access, one parquet row group (or one
memory-mapped Arrow row) at a time. For VG-Relation / VG-Attribution the reference evaluation
crops each image to the item's bounding box before scoring; with a crop box the store returns
that crop, re-encoded as PNG (lossless; PIL crop with the reference's float box, i.e. rounded
coordinates: `crop_png`).

The store pickles and works in another process (a DataLoader worker started with `spawn`): its
copy re-opens the same row source there and registers itself for `image_bytes`.

An image cell holding a path and no bytes is read only inside the snapshot folder, through the
checks of image references (`lexsem.images.confine`: no absolute path, no `..`, no link out of
the folder); from the Hub, never. Those refusals are `ImageError`s (``unsafe``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lexsem.benchmarks.sources.hf_dataset import HFDataset
from lexsem.benchmarks.sources.hf_rows import RowSource
from lexsem.errors import DataError, LexsemError
from lexsem.images.confine import confined_file, refuse_unsafe
from lexsem.images.decode import DEFAULT, decode
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS, check_pixels
from lexsem.images.refs import ImageError

MEM_PREFIX = "mem:"


def image_ref(dataset: str, split: str, row: int, column: str) -> str:
    return f"{MEM_PREFIX}{dataset}/{split}/{row}/{column}"


def parse_image_ref(ref: str) -> tuple[str, str, int, str]:
    """`mem:<dataset>/<split>/<row>/<column>` -> (dataset, split, row, column)."""
    if not ref.startswith(MEM_PREFIX):
        raise ValueError(f"not an in-dataset image ref: {ref!r}")
    parts = ref[len(MEM_PREFIX) :].split("/")
    if len(parts) != 4 or not parts[2].isdigit():
        raise ValueError(f"malformed image ref {ref!r}; expected mem:<dataset>/<split>/<row>/<col>")
    return parts[0], parts[1], int(parts[2]), parts[3]


BBox = tuple[float, float, float, float]  # x, y, w, h


class HFImageStore(Mapping[str, bytes]):
    """Lazy mapping image ref -> encoded image bytes (PNG/JPEG as stored, or a PNG crop).

    Picklable, and usable in another process (e.g. a DataLoader worker started with
    ``spawn``): a copy holds the parquet file paths (or the `datasets.Dataset`, whose Arrow cache
    files pickle by path) and the refs, re-opens the files on first access, and registers itself
    for `image_bytes` in that process.
    """

    def __init__(
        self,
        dataset: HFDataset,
        split: str,
        source: RowSource,
        refs: Sequence[str],
        crops: Mapping[str, BBox] | None = None,
    ) -> None:
        self.dataset = dataset
        self.split = split
        self._source = source
        self._refs = list(dict.fromkeys(refs))
        self._known = set(self._refs)
        self._crops = dict(crops or {})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        register_store(self, replace=False)

    def __len__(self) -> int:
        return len(self._refs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __contains__(self, ref: object) -> bool:
        return ref in self._known

    def crop_box(self, ref: str) -> BBox | None:
        """The (x, y, w, h) box the bytes of `ref` are cropped to, if any."""
        return self._crops.get(ref)

    def __getitem__(self, ref: str) -> bytes:
        return self.read_limited(ref, DEFAULT_MAX_IMAGE_PIXELS)

    def read_limited(self, ref: str, max_pixels: int) -> bytes:
        """The bytes of `ref`; an image is cropped only when within `max_pixels` (else an
        `ImageError` ``"too-large"``). `ImageStore` calls this with its own limit."""
        if ref not in self._known:
            raise KeyError(ref)
        _, _, row, column = parse_image_ref(ref)
        raw = _image_bytes(
            self._source.cell(row, column),
            ref=ref,
            key=self.dataset.key,
            where=self._source.label,
            row=row,
            folders=self._source.image_folders(row),
        )
        box = self._crops.get(ref)
        return raw if box is None else crop_png(raw, box, max_pixels=max_pixels, ref=ref)

    def open(self, ref: str) -> Any:
        """The image of `ref` as an RGB `PIL.Image` (needs Pillow)."""
        return decode(self[ref], DEFAULT, ref=ref)


def _image_bytes(
    value: Any,
    *,
    ref: str,
    key: str,
    where: str,
    row: int,
    folders: tuple[list[Path], Path] | None,
) -> bytes:
    """Bytes of an HF Image cell: {"bytes", "path"} struct, raw bytes, or a path string."""
    data: Any = None
    path: Any = None
    if isinstance(value, dict):
        data, path = value.get("bytes"), value.get("path")
    elif isinstance(value, (bytes, bytearray)):
        data = value
    elif isinstance(value, str):
        path = value
    if data:
        return bytes(data)
    if path:
        return _path_bytes(str(path), ref=ref, key=key, where=where, row=row, folders=folders)
    column = parse_image_ref(ref)[3]
    raise DataError(
        f"{key}: image field {column!r} is empty (no bytes, no path)", file=where, item=f"row {row}"
    )


def _path_bytes(
    path: str, *, ref: str, key: str, where: str, row: int, folders: tuple[list[Path], Path] | None
) -> bytes:
    """The file an image cell names by path alone, read only inside the dataset's folder, with
    the checks of image references (`lexsem.images.confine`); from the Hub, never."""
    column = parse_image_ref(ref)[3]
    if folders is None:
        raise ImageError(
            f"{key}: image field {column!r} of row {row} ({where}) has no embedded bytes, only "
            f"the path {path!r}; lexsem reads image paths only inside a local snapshot folder "
            "(data_dir), never from Hub data",
            ref=ref,
            reason="unsafe",
        )
    places, root = folders
    refuse_unsafe(
        path,
        ref,
        f"{where}, row {row}, names {path!r}; image paths in a dataset are "
        f"read only inside its folder {root}",
    )
    for folder in places:
        real = confined_file(folder, path, ref=ref, root=root)
        if real is None:
            continue
        try:
            return real.read_bytes()
        except OSError as exc:
            raise ImageError(
                f"{key}: image field {column!r} names {path!r}, which cannot be read "
                f"({exc.strerror or exc})",
                ref=ref,
                reason="unreadable",
                file=where,
                item=f"row {row}",
            ) from None
    raise ImageError(
        f"{key}: image field {column!r} has no embedded bytes and its path {path!r} does not "
        f"exist (looked in {', '.join(map(str, places))})",
        ref=ref,
        reason="missing",
        file=where,
        item=f"row {row}",
    )


def crop_png(
    data: bytes,
    box: BBox,
    *,
    max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
    ref: str = "<image bytes>",
) -> bytes:
    """Crop encoded image bytes to (x, y, w, h) as the ARO reference does, re-encoded as PNG.

    Reference: `Image.open(p).convert('RGB').crop((x, y, x + w, y + h))`; PIL rounds the float box.
    Decoded as the `default` profile does (the same pixels, 16-bit greyscale scaled); an image
    or a box over `max_pixels` is an `ImageError` (``"too-large"``) naming `ref`.
    """
    x, y, w, h = box
    check_pixels((max(1, round(w)), max(1, round(h))), max_pixels, ref)
    out = decode(data, DEFAULT, max_pixels=max_pixels, ref=ref).crop((x, y, x + w, y + h))
    buf = io.BytesIO()
    out.save(buf, format="PNG")
    return buf.getvalue()


# Stores known to this process, by (dataset key, split): those loaded here and those unpickled
# here (a spawned worker's copy). `image_bytes(ref)` resolves a ref through them.
_STORES: dict[tuple[str, str], HFImageStore] = {}


def register_store(store: HFImageStore, *, replace: bool = True) -> None:
    """Make `store` the one `image_bytes` uses for its (dataset, split); with `replace=False`
    only when that (dataset, split) has none yet."""
    key = (store.dataset.key, store.split)
    if replace or key not in _STORES:
        _STORES[key] = store


def loaded_stores() -> list[HFImageStore]:
    """The stores of the datasets loaded (or unpickled) in this process."""
    return list(_STORES.values())


def image_bytes(ref: str) -> bytes:
    """Bytes behind a `mem:` ref of a dataset loaded (or unpickled) in this process."""
    key, split, _, _ = parse_image_ref(ref)
    store = _STORES.get((key, split))
    if store is None:
        raise LexsemError(f"image {ref}: dataset {key!r} split {split!r} is not loaded")
    return store[ref]

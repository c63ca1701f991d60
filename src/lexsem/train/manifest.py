"""The training manifest: one row per training example, in JSONL or Parquet, checked in full
before any training starts.

A row has the fields

- ``image`` (required): an image reference, resolved by an `ImageStore` exactly as evaluation
  resolves a benchmark's images (`lexsem.images.image_store`): ``ROOT:relative/path``, a bare
  ``relative/path`` under the default root (COCO 2017), ``mem:KEY``, ``synthetic:<scene id>``
  — with the same path safety (root confinement, `lexsem.images.confine`) and the same pixel
  limit (`lexsem.images.pixels`). One more root is known while reading a manifest:
  ``manifest:relative/path`` names a file under the manifest's own folder (`MANIFEST_ROOT`;
  what `lexsem.train.rendered.write_rendered` writes);
- ``caption`` (required): a non-empty string;
- ``negatives``: a list of hard negative captions of the image (may be empty or absent), each
  non-empty, none equal to the caption or repeated (NegCLIP's swap negatives, TROHN-Text's
  generated negatives: BiVLC, §5);
- ``negative_image`` and ``negative_image_caption``: a hard negative image and the caption
  that is true of it, both or neither (TROHN-Img, NegCLIP's hard images);
- ``split``: ``train`` (the default) or ``dev`` (model selection).

`read_manifest` refuses a file with an unknown field, a missing or mistyped field, an empty
caption, an unknown split, a JSONL line that `lexsem.jsonl.read_jsonl` refuses (not UTF-8, not JSON,
nested deeper than `lexsem.jsonl.MAX_DEPTH`: checked before the line is parsed) or that gives a
field twice, or an image that does not
resolve (outside its root, missing, not an image, over the pixel limit); every error is a
`DataError` naming the file and the line (JSONL, from 1) or row (Parquet, from 0). Missing required
fields are reported for every row at once: the first row lacking any, with all it lacks, and the
lines of the others. Images are checked by reading their header only (the first MiB); the digest of
those bytes and each file's size, over all images in manifest order, is the manifest's
`images_sha256`.

A row that repeats an earlier row in every field is kept (COCO has images with a caption given
twice) and counted: `duplicates`, recorded with the manifest, and a `DataWarning` naming the
first repeat's line and the line it repeats (in a contrastive batch that holds both, an image's
caption is also one of its negatives).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from lexsem.atomic import atomic_path
from lexsem.benchmarks.formats import DuplicateKey, unique_keys
from lexsem.errors import DataError, DataWarning
from lexsem.images.image_store import ImageStore
from lexsem.images.pixels import open_image
from lexsem.images.refs import ImageError, ResolvedImage
from lexsem.jsonl import read_jsonl

__all__ = [
    "FIELDS",
    "MANIFEST_ROOT",
    "SPLITS",
    "Example",
    "Manifest",
    "ManifestFormat",
    "check_image",
    "manifest_format",
    "manifest_sha256",
    "read_manifest",
    "write_manifest",
]

ManifestFormat = Literal["jsonl", "parquet"]

SPLITS: tuple[str, ...] = ("train", "dev")
FIELDS: tuple[str, ...] = (
    "image",
    "caption",
    "negatives",
    "negative_image",
    "negative_image_caption",
    "split",
)
REQUIRED: tuple[str, ...] = ("image", "caption")
#: The image root of references relative to the manifest's folder (``manifest:images/0.png``).
MANIFEST_ROOT = "manifest"

_SUFFIXES: dict[str, ManifestFormat] = {".jsonl": "jsonl", ".parquet": "parquet"}
_HEAD_BYTES = 1 << 20  # enough for the header of any real image; the whole file otherwise
_IMAGE_THREADS = 8
_LISTED = 5  # rows named in an error about several unusable images


@dataclass(frozen=True)
class Example:
    """One training example. `row`: its JSONL line (from 1) or Parquet row (from 0)."""

    image: str
    caption: str
    negatives: tuple[str, ...] = ()
    negative_image: str | None = None
    negative_image_caption: str | None = None
    split: str = "train"
    row: int = field(default=0, compare=False)

    def record(self) -> dict[str, Any]:
        """The row as written to a manifest (without `row`)."""
        out = asdict(self)
        del out["row"]
        out["negatives"] = list(self.negatives)
        return out


@dataclass(frozen=True)
class Manifest:
    """A checked manifest: its `examples` in file order, the sha256 of the file read, the
    digest of its images (`images_sha256`: None when they were not checked) and the number of
    rows that repeat an earlier row."""

    path: Path
    format: ManifestFormat
    sha256: str
    examples: tuple[Example, ...]
    images_sha256: str | None = None
    duplicates: int = 0

    def split(self, name: str) -> list[Example]:
        """The examples of split `name` (``train`` or ``dev``)."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r} (splits: {', '.join(SPLITS)})")
        return [ex for ex in self.examples if ex.split == name]

    def where(self, example: Example) -> str:
        """``file:line`` (JSONL) or ``file, row N`` (Parquet) of `example`."""
        if self.format == "jsonl":
            return f"{self.path}:{example.row}"
        return f"{self.path}, row {example.row}"

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for the training run's record."""
        return {
            "path": str(self.path),
            "format": self.format,
            "sha256": self.sha256,
            "examples": len(self.examples),
            "splits": {s: len(self.split(s)) for s in SPLITS},
            "negatives": sum(len(ex.negatives) for ex in self.examples),
            "negative_images": sum(ex.negative_image is not None for ex in self.examples),
            "duplicates": self.duplicates,
            "images_sha256": self.images_sha256,
        }


# --- reading -------------------------------------------------------------------------------


def manifest_format(path: str | Path) -> ManifestFormat:
    """The format named by the suffix of `path` (``.jsonl`` or ``.parquet``)."""
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise DataError(
            f"unknown manifest format {suffix or '(no suffix)'!r}: use .jsonl or .parquet",
            file=path,
        )
    return _SUFFIXES[suffix]


def read_manifest(path: str | Path, images: ImageStore, *, check_images: bool = True) -> Manifest:
    """Read and check the manifest at `path` (see the module doc); every problem is a
    `DataError` naming the file and line / row, raised before anything is trained.

    `images` resolves the references; ``manifest:`` references are made resolvable by adding
    the manifest's folder to it as the root `MANIFEST_ROOT` (replacing an earlier one).
    `check_images=False` skips resolving and opening the images (tests of the fields only).
    """
    path = Path(path)
    fmt = manifest_format(path)
    raw = _read_bytes(path)
    records = _jsonl_records(raw, path) if fmt == "jsonl" else _parquet_records(raw, path)
    _check_required(records, path, fmt)
    examples = tuple(_example(rec, row, path, fmt) for row, rec in records)
    if not examples:
        raise DataError("the manifest has no examples", file=path)
    duplicates = _duplicates(examples, path, fmt)
    if any(_uses_manifest_root(ex) for ex in examples):
        images.add_root(MANIFEST_ROOT, path.parent.resolve())
    digest = _check_images(examples, images, path, fmt) if check_images else None
    return Manifest(path, fmt, hashlib.sha256(raw).hexdigest(), examples, digest, duplicates)


def manifest_sha256(path: str | Path) -> str:
    """The sha256 of the manifest file at `path` (what `Manifest.sha256` records)."""
    return hashlib.sha256(_read_bytes(Path(path))).hexdigest()


def _unit(fmt: ManifestFormat) -> str:
    return "line" if fmt == "jsonl" else "row"


def _check_required(records: list[tuple[int, Any]], path: Path, fmt: ManifestFormat) -> None:
    """Every row has the required fields; else one `DataError` naming the first row that
    lacks any, every field it lacks, and the other rows lacking fields."""
    lacking = [
        (row, [k for k in REQUIRED if k not in rec])
        for row, rec in records
        if isinstance(rec, dict) and any(k not in rec for k in REQUIRED)
    ]
    if not lacking:
        return
    row, keys = lacking[0]
    more = ""
    if len(lacking) > 1:
        rows = ", ".join(str(r) for r, _ in lacking[1 : 1 + _LISTED])
        etc = ", ..." if len(lacking) > 1 + _LISTED else ""
        more = (
            f" (and {len(lacking) - 1} more row(s) lacking required fields, at "
            f"{_unit(fmt)} {rows}{etc})"
        )
    raise DataError(f"{_missing(keys)}{more}", **_where(path, fmt, row))


def _missing(keys: list[str]) -> str:
    """``missing field 'image'`` / ``missing fields 'image', 'caption'``, and what is required."""
    plural = "s" if len(keys) > 1 else ""
    return f"missing field{plural} {', '.join(map(repr, keys))} (required: {', '.join(REQUIRED)})"


def _duplicates(examples: tuple[Example, ...], path: Path, fmt: ManifestFormat) -> int:
    """The number of rows equal in every field to an earlier row; a `DataWarning` naming the
    first when there are any."""
    first: dict[Example, int] = {}
    repeats: list[tuple[int, int]] = []
    for ex in examples:
        if ex in first:
            repeats.append((ex.row, first[ex]))
        else:
            first[ex] = ex.row
    if repeats:
        unit = _unit(fmt)
        row, earlier = repeats[0]
        warnings.warn(
            f"{path}: {len(repeats)} row(s) repeat an earlier row in every field (first: "
            f"{unit} {row} repeats {unit} {earlier}); each is trained on as a separate example",
            DataWarning,
            stacklevel=3,
        )
    return len(repeats)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the manifest: {exc.strerror or exc}", file=path) from None


def _where(path: Path, fmt: ManifestFormat, row: int) -> dict[str, Any]:
    """DataError keywords naming a JSONL line or a Parquet row."""
    if fmt == "jsonl":
        return {"file": path, "line": row}
    return {"file": path, "item": f"row {row}"}


def _jsonl_records(raw: bytes, path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed value) of every non-blank line (`lexsem.jsonl.read_jsonl` over the
    bytes read, a field given twice in a line an error naming it)."""
    return list(read_jsonl(path, data=raw, object_pairs_hook=_unique_fields))


def _unique_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    try:
        return unique_keys(pairs)
    except DuplicateKey as exc:
        raise ValueError(f"the field {exc.key!r} appears twice") from None


def _parquet_records(raw: bytes, path: Path) -> list[tuple[int, Any]]:
    """(row index, row as a dict) of every row; missing or unknown columns name the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(raw))
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"not a readable Parquet file: {exc}", file=path) from None
    names = table.column_names
    unknown = [c for c in names if c not in FIELDS]
    if unknown:
        raise DataError(
            f"unknown column(s) {', '.join(map(repr, unknown))} (known: {', '.join(FIELDS)})",
            file=path,
        )
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise DataError(f"missing column(s) {', '.join(map(repr, missing))}", file=path)
    return list(enumerate(table.to_pylist()))


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _text(rec: Mapping[str, Any], key: str, where: dict[str, Any]) -> str:
    value = rec[key]
    if not isinstance(value, str):
        raise DataError(f"field {key!r} must be a string, got {_type_name(value)}", **where)
    if not value.strip():
        raise DataError(f"field {key!r} is empty", **where)
    return value


def _optional_text(rec: Mapping[str, Any], key: str, where: dict[str, Any]) -> str | None:
    if rec.get(key) is None:
        return None
    return _text(rec, key, where)


def _negatives(rec: Mapping[str, Any], caption: str, where: dict[str, Any]) -> tuple[str, ...]:
    value = rec.get("negatives")
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise DataError(
            f"field 'negatives' must be a list of strings, got {_type_name(value)}", **where
        )
    seen: dict[str, int] = {}
    for i, neg in enumerate(value):
        if not isinstance(neg, str):
            raise DataError(f"negative {i} must be a string, got {_type_name(neg)}", **where)
        if not neg.strip():
            raise DataError(f"negative {i} is empty", **where)
        if neg == caption:
            raise DataError(f"negative {i} is the caption itself: {neg!r}", **where)
        if neg in seen:
            raise DataError(f"negative {i} repeats negative {seen[neg]}: {neg!r}", **where)
        seen[neg] = i
    return tuple(value)


def _split(rec: Mapping[str, Any], where: dict[str, Any]) -> str:
    value = rec.get("split")
    if value is None:
        return "train"
    if value not in SPLITS:
        raise DataError(f"unknown split {value!r} (splits: {', '.join(SPLITS)})", **where)
    return str(value)


def _example(rec: Any, row: int, path: Path, fmt: ManifestFormat) -> Example:
    """The example of one row, every field checked (a `DataError` naming file and row)."""
    where = _where(path, fmt, row)
    if not isinstance(rec, dict):
        raise DataError(f"a row must be a JSON object, got {_type_name(rec)}", **where)
    unknown = [k for k in rec if k not in FIELDS]
    if unknown:
        raise DataError(
            f"unknown field(s) {', '.join(map(repr, unknown))} (fields: {', '.join(FIELDS)})",
            **where,
        )
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise DataError(_missing(missing), **where)
    caption = _text(rec, "caption", where)
    neg_image = _optional_text(rec, "negative_image", where)
    neg_caption = _optional_text(rec, "negative_image_caption", where)
    if (neg_image is None) != (neg_caption is None):
        given, lacking = (
            ("negative_image", "negative_image_caption")
            if neg_image is not None
            else ("negative_image_caption", "negative_image")
        )
        raise DataError(f"field {given!r} is given without {lacking!r}", **where)
    if neg_caption is not None and neg_caption == caption:
        raise DataError("the negative image's caption is the caption itself", **where)
    return Example(
        image=_text(rec, "image", where),
        caption=caption,
        negatives=_negatives(rec, caption, where),
        negative_image=neg_image,
        negative_image_caption=neg_caption,
        split=_split(rec, where),
        row=row,
    )


# --- images --------------------------------------------------------------------------------


def _uses_manifest_root(ex: Example) -> bool:
    prefix = MANIFEST_ROOT + ":"
    return ex.image.startswith(prefix) or (ex.negative_image or "").startswith(prefix)


def _head(res: ResolvedImage) -> tuple[bytes, bool, int]:
    """The first bytes of a file, whether that is all of it, and its size; in-memory bytes
    whole."""
    if res.path is None:
        data = res.read()
        return data, True, len(data)
    try:
        with open(res.path, "rb") as fh:
            head = fh.read(_HEAD_BYTES + 1)
            size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        raise ImageError(
            f"image {res.ref!r} cannot be read: {exc}", ref=res.ref, reason="unreadable"
        ) from None
    return head[:_HEAD_BYTES], len(head) <= _HEAD_BYTES, size


def check_image(images: ImageStore, ref: str) -> str:
    """Resolve `ref` as evaluation does and open its header under the store's pixel limit;
    `ImageError` (unsafe, unknown root, missing, unreadable, undecodable, too large). Returns
    the sha256 of the image's size and its first MiB (the bytes read)."""
    res = images.resolve(ref)
    data, whole, size = _head(res)
    digest = hashlib.sha256(f"{size}\n".encode() + data).hexdigest()
    try:
        open_image(data, images.max_pixels, ref)
        return digest
    except ImageError:
        raise
    except Exception as exc:
        if whole:
            raise _undecodable(ref, exc) from None
    try:
        open_image(res.read(), images.max_pixels, ref)
    except ImageError:
        raise
    except Exception as exc:
        raise _undecodable(ref, exc) from None
    return digest


def _undecodable(ref: str, exc: Exception) -> ImageError:
    return ImageError(
        f"image {ref!r} is not a readable image ({type(exc).__name__}: {exc})",
        ref=ref,
        reason="undecodable",
    )


def _problem(images: ImageStore, ref: str) -> tuple[str | None, str]:
    """(what is wrong with `ref` or None, its digest: `check_image`)."""
    try:
        return None, check_image(images, ref)
    except ImageError as exc:
        return f"{exc.detail} [{exc.reason}]", ""


def _check_images(
    examples: Iterable[Example], images: ImageStore, path: Path, fmt: ManifestFormat
) -> str:
    """Every image and negative image resolvable and within the pixel limit; the first
    failure (in file order) raised, naming the rows of the others. Returns the sha256 over
    every image's reference and digest (`check_image`), in manifest order."""
    first_row: dict[str, tuple[int, str]] = {}
    for ex in examples:
        first_row.setdefault(ex.image, (ex.row, "image"))
        if ex.negative_image is not None:
            first_row.setdefault(ex.negative_image, (ex.row, "negative_image"))
    refs = list(first_row)
    with ThreadPoolExecutor(_IMAGE_THREADS) as pool:
        checked = list(pool.map(lambda r: _problem(images, r), refs))
    bad = [(first_row[r], p) for r, (p, _) in zip(refs, checked, strict=True) if p is not None]
    if not bad:
        total = hashlib.sha256()
        for ref, (_, digest) in zip(refs, checked, strict=True):
            total.update(f"{ref}\0{digest}\n".encode())
        return total.hexdigest()
    bad.sort(key=lambda b: b[0][0])
    (row, key), message = bad[0]
    more = ""
    if len(bad) > 1:
        rows = ", ".join(str(r) for (r, _), _ in bad[1 : 1 + _LISTED])
        etc = ", ..." if len(bad) > 1 + _LISTED else ""
        more = f" (and {len(bad) - 1} more unusable image(s), first at {_unit(fmt)} {rows}{etc})"
    raise DataError(f"field {key!r}: {message}{more}", **_where(path, fmt, row))


# --- writing -------------------------------------------------------------------------------


def _as_example(
    value: Example | Mapping[str, Any], row: int, path: Path, fmt: ManifestFormat
) -> Example:
    if isinstance(value, Example):
        value = value.record()
    return _example(dict(value), row, path, fmt)


def write_manifest(path: str | Path, examples: Iterable[Example | Mapping[str, Any]]) -> Path:
    """Write `examples` (each checked as `read_manifest` checks rows; images are not opened)
    to `path`, JSONL or Parquet by its suffix, atomically. Returns `path`."""
    path = Path(path)
    fmt = manifest_format(path)
    start = 1 if fmt == "jsonl" else 0
    rows = [_as_example(ex, i, path, fmt).record() for i, ex in enumerate(examples, start)]
    if not rows:
        raise DataError("no examples to write", file=path)
    with atomic_path(path) as tmp:
        if fmt == "jsonl":
            lines = (json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            tmp.write_text("".join(lines), encoding="utf-8")
        else:
            tmp.write_bytes(_parquet_bytes(rows))
    return path


def _parquet_bytes(rows: list[dict[str, Any]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("image", pa.string()),
            ("caption", pa.string()),
            ("negatives", pa.list_(pa.string())),
            ("negative_image", pa.string()),
            ("negative_image_caption", pa.string()),
            ("split", pa.string()),
        ]
    )
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return buf.getvalue()

"""Loaders for benchmarks published as Hugging Face datasets with embedded images.

BiVLC and Winoground become `QuadItem`s, the four ARO benchmarks `MultiCaptionItem`s. Each row is
read through a small per-dataset field mapping (`HF_DATASETS`), so a mirror with other column
names needs only a new mapping, not new code.

Two sources, same items, same image refs:
- the Hub: `datasets.load_dataset(repo, split=..., token=...)` (needs the optional `datasets`
  package and, for gated datasets such as Winoground, a token and accepted terms);
- a local folder of parquet files (`data_dir`, read with pyarrow only): the repository snapshot
  (`hf download --repo-type dataset REPO --local-dir DIR` gives `DIR/data/test-000xx-of-000nn`
  `.parquet`) or the Hub's parquet export (`DIR/default/test/0000.parquet`). Files whose name
  starts with `<split>-`, whose stem is `<split>` or that sit under a `<split>/` folder are used;
  when none match, every parquet file in the folder is (a folder holding one split only). Without an
  explicit `data_dir`, `$LEXSEM_DATA_DIR/hf/<owner>/<name>/` is used when it exists.

Images are not decoded. Each item names its images by ref, `mem:<dataset>/<split>/<row>/<column>`
(`<dataset>` is the lexsem key, e.g. `bivlc`; `<row>` the row number in file order, which is the
Hub's row order), and the loader returns an `HFImageStore`: a lazy mapping ref -> encoded image
bytes (the PNG/JPEG bytes of the dataset's Image feature, as stored). Bytes are read on access,
one parquet row group (or one memory-mapped Arrow row) at a time, so loading the items never reads
the images. For VG-Relation / VG-Attribution the reference evaluation crops each image to the
item's bounding box before scoring; with `crop=True` (default) the store returns that crop,
re-encoded as PNG (lossless; PIL crop with the reference's float box, i.e. rounded coordinates).

The store pickles and works in another process (a DataLoader worker started with `spawn`): its
copy re-opens the same parquet files (checking their size and mtime), or the dataset's Arrow
cache files, there, and registers itself for `image_bytes`.

An image cell holding a path and no bytes is read only inside the snapshot folder (`data_dir`),
through the checks of image references (`lexsem.images.confine`: no absolute path, no `..`, no
link out of the folder); from the Hub, never. Those refusals are `ImageError`s (``unsafe``).

Errors: a missing column or a null / non-text value raises `DataError` naming the dataset, the
file (or Hub id), the row and the field. An unreachable Hub is found in seconds
(`hf_hub.unreachable`, before `datasets` starts its retries) and said as such, naming the
snapshot folders looked in (`snapshot_folders`); a gated dataset without a token (the Hub being
reachable) raises `LexsemError` saying how to accept the terms and provide `HF_TOKEN`.

Field names are taken from the dataset cards / public evaluation code; the uncertain ones are
marked in `HF_DATASETS` (see `HFDataset.notes`).
"""

from __future__ import annotations

import bisect
import io
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lexsem import paths
from lexsem.benchmarks import ids
from lexsem.benchmarks.items import MultiCaptionItem, QuadItem
from lexsem.benchmarks.sources import hf_hub
from lexsem.errors import DataError, LexsemError
from lexsem.images.confine import confined_file, refuse_unsafe
from lexsem.images.decode import DEFAULT, decode
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS, check_pixels
from lexsem.images.refs import ImageError

MEM_PREFIX = "mem:"

# ---------------------------------------------------------------------------------------------
# Per-dataset field mappings


@dataclass(frozen=True)
class QuadFields:
    """Columns of a quad dataset: (image0, caption0) and (image1, caption1) are the true pairs."""

    image0: str
    caption0: str
    image1: str
    caption1: str
    id: str | None = None  # item id column; None -> the row number
    groups: tuple[str, ...] = ()  # copied into QuadItem.group as (column, str(value))
    subset: tuple[str, ...] = ()  # columns joined with "_" into item.subset; () -> the default


@dataclass(frozen=True)
class MultiFields:
    """Columns of a multi-caption dataset: one image, the true caption first."""

    image: str
    captions: tuple[str, ...]  # captions[0] is the true caption
    id: str | None = None  # item id column; None -> the row number
    label: str | None = None  # relation / attribute column (a list value is joined with "_")
    bbox: str | None = None  # crop box column: struct {x, y, w, h} or a list [x, y, w, h]


@dataclass(frozen=True)
class HFDataset:
    key: str  # lexsem name, used in image refs
    repo: str  # Hugging Face Hub dataset id
    split: str
    kind: Literal["quad", "multi"]
    fields: QuadFields | MultiFields
    subset: str  # item.subset when the fields do not derive one
    gated: bool = False
    expected_rows: int | None = None
    # Items per item.subset, when known (BiVLC: Table 1 of the paper / 4 retrieval examples each).
    expected_subsets: tuple[tuple[str, int], ...] = ()
    notes: str = ""

    @property
    def image_columns(self) -> tuple[str, ...]:
        f = self.fields
        return (f.image0, f.image1) if isinstance(f, QuadFields) else (f.image,)


_ORDER_CAPTIONS = ("correct_caption", "hard_text_1", "hard_text_2", "hard_text_3", "hard_text_4")

HF_DATASETS: dict[str, HFDataset] = {
    d.key: d
    for d in (
        HFDataset(
            "bivlc",
            "imirandam/BiVLC",
            "test",
            "quad",
            QuadFields(
                "image",
                "caption",
                "negative_image",
                "negative_caption",
                groups=("type", "subtype"),
                subset=("type", "subtype"),
            ),
            subset="all",
            expected_rows=2933,
            expected_subsets=(
                ("replace_obj", 1200),
                ("replace_att", 437),
                ("replace_rel", 462),
                ("swap_obj", 81),
                ("swap_att", 278),
                ("add_obj", 399),
                ("add_att", 76),
            ),
            notes="Fields from the BiVLC paper, App. B (image, caption, negative_caption, "
            "negative_image, type, subtype). No id column: the item id is the row number. "
            "item.subset is '<type>_<subtype>' (e.g. 'replace_obj', as in SugarCrepe).",
        ),
        HFDataset(
            "winoground",
            "facebook/winoground",
            "test",
            "quad",
            QuadFields(
                "image_0",
                "caption_0",
                "image_1",
                "caption_1",
                id="id",
                groups=("tag", "secondary_tag", "num_main_preds", "collapsed_tag"),
            ),
            subset="all",
            gated=True,
            expected_rows=400,
            notes="Gated (accept the terms on the Hub). The Hub repo was published with a "
            "loading script, which `datasets>=4` refuses; the loader then retries the Hub's "
            "parquet export (revision refs/convert/parquet).",
        ),
        HFDataset(
            "aro_vg_relation",
            "gowitheflow/ARO-Visual-Relation",
            "test",
            "multi",
            MultiFields(
                "image", ("true_caption", "false_caption"), label="relation_name", bbox="bbox"
            ),
            subset="vg_relation",
            expected_rows=23937,
            notes="Columns from the dataset card: image, true_caption, false_caption, "
            "relation_name, bbox {x, y, w, h}. The images are the full Visual Genome images; "
            "the reference crops them to bbox (crop=True).",
        ),
        HFDataset(
            "aro_vg_attribution",
            "gowitheflow/ARO-Visual-Attribution",
            "test",
            "multi",
            MultiFields(
                "image", ("true_caption", "false_caption"), label="attributes", bbox="bbox"
            ),
            subset="vg_attribution",
            expected_rows=28748,
            notes="image, true_caption, false_caption confirmed by public evaluation code; "
            "'attributes' (the two attributes, joined as 'a_b' like the reference) and 'bbox' "
            "are ASSUMED to mirror the original JSON and VG-Relation - check the dataset card.",
        ),
        HFDataset(
            "aro_coco_order",
            "gowitheflow/ARO-COCO-order",
            "test",
            "multi",
            MultiFields("images", _ORDER_CAPTIONS),
            subset="coco_order",
            expected_rows=25010,
            notes="Columns from the dataset card: images, correct_caption, hard_text_1..4.",
        ),
        HFDataset(
            "aro_flickr30k_order",
            "gowitheflow/ARO-Flickr-Order",
            "test",
            "multi",
            MultiFields("images", _ORDER_CAPTIONS),
            subset="flickr30k_order",
            expected_rows=5000,
            notes="Columns as COCO-order (images, correct_caption, hard_text_1..4), per public "
            "evaluation code.",
        ),
    )
}


def get_hf_dataset(key: str) -> HFDataset:
    try:
        return HF_DATASETS[key]
    except KeyError:
        raise LexsemError(
            f"unknown Hugging Face benchmark {key!r}; known: {', '.join(HF_DATASETS)}"
        ) from None


# ---------------------------------------------------------------------------------------------
# Image refs


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


# ---------------------------------------------------------------------------------------------
# Row sources: local parquet files (pyarrow) or a `datasets.Dataset`


def _stamp(path: Path, key: str) -> tuple[int, int]:
    """(size, mtime_ns) of `path`: a re-opened file must be the one that was loaded."""
    try:
        st = path.stat()
    except OSError as exc:
        raise DataError(
            f"{key}: cannot read the parquet file ({exc.strerror or exc})", file=path
        ) from exc
    return st.st_size, st.st_mtime_ns


class _Source:
    label: str  # names the data in errors: a file path or "hf:<repo>[<split>]"
    columns: list[str]

    def _check(self, columns: Sequence[str]) -> None:
        """DataError naming the first row when a column is missing."""
        raise NotImplementedError

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        raise NotImplementedError

    def cell(self, row: int, column: str) -> Any:
        raise NotImplementedError

    def image_folders(self, row: int) -> tuple[list[Path], Path] | None:
        """(folders a relative image path of this row is looked up in, in order; the root folder
        it must stay inside), or None when this source reads no image paths."""
        return None


class _ParquetSource(_Source):
    """Local parquet files, read with pyarrow. Picklable: a copy records the files (and their
    size and mtime) and re-opens them on first use, in whichever process it lands.

    `root`: the dataset's folder (the snapshot); image paths stored in the files are read only
    inside it (default: the folder of the first file)."""

    def __init__(self, files: Sequence[Path], key: str, root: Path | None = None) -> None:
        self.key = key
        self.files = list(files)
        self.root = root if root is not None else self.files[0].parent
        self.label = str(self.files[0].parent) if len(self.files) > 1 else str(self.files[0])
        self._pf: list[Any] | None = None
        self._stamps = [_stamp(f, key) for f in self.files]
        self._file_start: list[int] = []  # first global row of each file
        self._rg_start: list[list[int]] = []  # first local row of each row group, per file
        total = 0
        for pf in self._open():
            self._file_start.append(total)
            starts, n = [], 0
            for i in range(pf.metadata.num_row_groups):
                starts.append(n)
                n += pf.metadata.row_group(i).num_rows
            self._rg_start.append(starts)
            total += n
        self.num_rows = total
        self.columns = list(self._open()[0].schema_arrow.names)
        self._cache: dict[str, tuple[tuple[int, int], Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_pf": None, "_cache": {}}

    def _open(self) -> list[Any]:
        """The open `ParquetFile`s (opened on first use; files changed since are an error)."""
        if self._pf is None:
            import pyarrow.parquet as pq

            opened = []
            for f, stamp in zip(self.files, self._stamps, strict=True):
                if _stamp(f, self.key) != stamp:
                    raise DataError(
                        f"{self.key}: the parquet file changed since it was loaded", file=f
                    )
                try:
                    opened.append(pq.ParquetFile(f))
                except Exception as exc:
                    raise DataError(
                        f"{self.key}: not a readable parquet file ({exc})", file=f
                    ) from exc
            self._pf = opened
        return self._pf

    def _check(self, columns: Sequence[str]) -> None:
        for i, pf in enumerate(self._open()):
            have = set(pf.schema_arrow.names)
            for c in columns:
                if c not in have:
                    raise DataError(
                        f"{self.key}: missing field {c!r} (columns: {sorted(have)})",
                        file=self.files[i],
                        item=f"row {self._file_start[i]}",
                    )

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        self._check(columns)
        for i, pf in enumerate(self._open()):
            row = self._file_start[i]
            for batch in pf.iter_batches(batch_size=1024, columns=list(columns)):
                for rec in batch.to_pylist():
                    yield row, rec
                    row += 1

    def locate(self, row: int) -> tuple[int, int, int]:
        """Global row -> (file index, row group, row within the group)."""
        if not 0 <= row < self.num_rows:
            raise DataError(f"{self.key}: no row {row} ({self.num_rows} rows)", file=self.label)
        fi = bisect.bisect_right(self._file_start, row) - 1
        local = row - self._file_start[fi]
        rg = bisect.bisect_right(self._rg_start[fi], local) - 1
        return fi, rg, local - self._rg_start[fi][rg]

    def cell(self, row: int, column: str) -> Any:
        fi, rg, k = self.locate(row)
        cached = self._cache.get(column)
        if cached is None or cached[0] != (fi, rg):
            self._check([column])
            arr = self._open()[fi].read_row_group(rg, columns=[column]).column(0)
            cached = ((fi, rg), arr)
            self._cache[column] = cached  # one row group per column: sequential reads are cheap
        return cached[1][k].as_py()

    def image_folders(self, row: int) -> tuple[list[Path], Path] | None:
        folder = self.files[self.locate(row)[0]].parent
        return list(dict.fromkeys([folder, self.root])), self.root


class _HFSource(_Source):
    """A `datasets.Dataset` read through its Arrow storage (Image columns stay encoded bytes)."""

    def __init__(self, ds: Any, key: str, label: str) -> None:
        self.ds = ds
        self.key = key
        self.label = label
        self.columns = list(ds.column_names)
        self.num_rows = len(ds)
        self._by_col: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        # a `datasets.Dataset` pickles its memory-mapped Arrow cache files by path (an
        # in-memory one by value); the column views are rebuilt on use
        return {**self.__dict__, "_by_col": {}}

    def _check(self, columns: Sequence[str]) -> None:
        for c in columns:
            if c not in self.columns:
                raise DataError(
                    f"{self.key}: missing field {c!r} (columns: {sorted(self.columns)})",
                    file=self.label,
                    item="row 0",
                )

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        self._check(columns)
        view = self.ds.select_columns(list(columns)).with_format("arrow")
        row = 0
        for start in range(0, self.num_rows, 1024):
            for rec in view[start : start + 1024].to_pylist():
                yield row, rec
                row += 1

    def cell(self, row: int, column: str) -> Any:
        self._check([column])
        view = self._by_col.get(column)
        if view is None:
            view = self._by_col[column] = self.ds.select_columns([column]).with_format("arrow")
        return view[row].column(0)[0].as_py()


# ---------------------------------------------------------------------------------------------
# The lazy image store


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
        source: _Source,
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


def image_bytes(ref: str) -> bytes:
    """Bytes behind a `mem:` ref of a dataset loaded (or unpickled) in this process."""
    key, split, _, _ = parse_image_ref(ref)
    store = _STORES.get((key, split))
    if store is None:
        raise LexsemError(f"image {ref}: dataset {key!r} split {split!r} is not loaded")
    return store[ref]


# ---------------------------------------------------------------------------------------------
# Field readers


def _where(src: _Source, row: int) -> dict[str, Any]:
    return {"file": src.label, "item": f"row {row}"}


def _text(rec: dict[str, Any], col: str, key: str, src: _Source, row: int, strict: bool) -> str:
    if col not in rec:
        raise DataError(f"{key}: missing field {col!r}", **_where(src, row))
    v = rec[col]
    if v is None:
        raise DataError(f"{key}: field {col!r} is null", **_where(src, row))
    if not isinstance(v, str):
        raise DataError(
            f"{key}: field {col!r} must be a string, got {type(v).__name__}", **_where(src, row)
        )
    if strict and not v.strip():
        raise DataError(
            f"{key}: field {col!r} is empty; run `lexsem validate` for a full report",
            **_where(src, row),
        )
    return v


def _item_id(rec: dict[str, Any], col: str | None, key: str, src: _Source, row: int) -> str:
    """The item id from column `col` (null, NaN or empty ids are errors), or the row number."""
    if not col:
        return str(row)
    try:
        return ids.item_id(rec.get(col))
    except ValueError as exc:
        raise DataError(f"{key}: field {col!r}: {exc}", **_where(src, row)) from None


def _label(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return "_".join(str(x) for x in v)
    return str(v)


def _bbox(v: Any, col: str, key: str, src: _Source, row: int) -> BBox:
    try:
        if isinstance(v, dict):
            vals = (v["x"], v["y"], v["w"], v["h"])
        elif isinstance(v, (list, tuple)) and len(v) == 4:
            vals = tuple(v)
        else:
            raise TypeError(type(v).__name__)
        x, y, w, h = (float(a) for a in vals)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(
            f"{key}: field {col!r} must be a box {{x, y, w, h}} or [x, y, w, h], got {v!r}",
            **_where(src, row),
        ) from exc
    return (x, y, w, h)


# ---------------------------------------------------------------------------------------------
# Building items


@dataclass
class HFLoadResult:
    dataset: HFDataset
    split: str
    items: list[QuadItem] | list[MultiCaptionItem]
    images: HFImageStore
    source: str  # a parquet file / folder, or "hf:<repo>[<split>]"
    files: tuple[Path, ...] = field(default_factory=tuple)  # local parquet files read (sorted)


def _quad_items(
    spec: HFDataset, f: QuadFields, src: _Source, split: str, strict: bool
) -> tuple[list[QuadItem], list[str]]:
    cols = [f.caption0, f.caption1, *f.groups, *f.subset]
    if f.id:
        cols.append(f.id)
    src._check([f.image0, f.image1])
    items: list[QuadItem] = []
    refs: list[str] = []
    for row, rec in src.rows(list(dict.fromkeys(cols))):
        c0 = _text(rec, f.caption0, spec.key, src, row, strict)
        c1 = _text(rec, f.caption1, spec.key, src, row, strict)
        item_id = _item_id(rec, f.id, spec.key, src, row)
        subset = "_".join(_label(rec.get(c)) for c in f.subset) if f.subset else spec.subset
        group = tuple((c, _label(rec.get(c))) for c in f.groups)
        i0 = image_ref(spec.key, split, row, f.image0)
        i1 = image_ref(spec.key, split, row, f.image1)
        refs += [i0, i1]
        items.append(QuadItem(item_id, subset, i0, c0, i1, c1, group))
    return items, refs


def _multi_items(
    spec: HFDataset, f: MultiFields, src: _Source, split: str, strict: bool, crop: bool
) -> tuple[list[MultiCaptionItem], list[str], dict[str, BBox]]:
    cols = list(f.captions)
    if f.id:
        cols.append(f.id)
    if f.label:
        cols.append(f.label)
    use_crop = crop and f.bbox is not None
    if use_crop:
        cols.append(f.bbox)  # type: ignore[arg-type]
        if f.bbox not in src.columns:
            raise DataError(
                f"{spec.key}: missing field {f.bbox!r} (the crop box of the reference protocol; "
                "pass crop=False to score the full images instead)",
                **_where(src, 0),
            )
    src._check([f.image])
    items: list[MultiCaptionItem] = []
    refs: list[str] = []
    crops: dict[str, BBox] = {}
    for row, rec in src.rows(list(dict.fromkeys(cols))):
        caps = tuple(_text(rec, c, spec.key, src, row, strict) for c in f.captions)
        item_id = _item_id(rec, f.id, spec.key, src, row)
        label = ""
        if f.label:
            if rec.get(f.label) is None:
                raise DataError(f"{spec.key}: field {f.label!r} is null", **_where(src, row))
            label = _label(rec[f.label])
        ref = image_ref(spec.key, split, row, f.image)
        if use_crop:
            crops[ref] = _bbox(rec.get(f.bbox), f.bbox, spec.key, src, row)  # type: ignore[arg-type]
        refs.append(ref)
        items.append(MultiCaptionItem(item_id, spec.subset, ref, caps, label))
    return items, refs, crops


# ---------------------------------------------------------------------------------------------
# Sources: local parquet folder, or the Hub


def find_parquet_files(data_dir: str | Path, split: str, *, key: str = "") -> list[Path]:
    """The parquet files of `split` under `data_dir` (a folder, or one .parquet file), sorted."""
    root = Path(data_dir).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise DataError(f"{key}: data folder does not exist", file=root)
    found = sorted(root.rglob("*.parquet"), key=lambda p: p.relative_to(root).as_posix())
    if not found:
        raise DataError(f"{key}: no .parquet files in the data folder", file=root)

    def is_split(p: Path) -> bool:
        rel = p.relative_to(root)
        return p.name.startswith(f"{split}-") or p.stem == split or split in rel.parts[:-1]

    return [p for p in found if is_split(p)] or found


def stored_token() -> str | None:
    """A Hub token from the usual places: $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, `hf auth login`."""
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        v = os.environ.get(var, "").strip()
        if v:
            return v
    try:
        from huggingface_hub import get_token
    except ImportError:
        return None
    try:
        return get_token()
    except Exception:
        return None


def _gated_message(spec: HFDataset, looked: Sequence[Path] = ()) -> str:
    return (
        f"{spec.key}: {spec.repo} is a gated dataset on the Hugging Face Hub. Log in at "
        f"https://huggingface.co/datasets/{spec.repo} and accept its terms, create a read token "
        "(https://huggingface.co/settings/tokens), then provide it: `export HF_TOKEN=hf_...`, "
        "or `hf auth login` (formerly `huggingface-cli login`), or pass token=...; or "
        f"{hf_hub.snapshot_hint(spec.repo, looked)}."
    )


LoadDataset = Callable[..., Any]

_GATED_MARKERS = ("gated", "401 client", "403 client", "authenticated")


def _datasets_loader(spec: HFDataset) -> LoadDataset:
    try:
        from datasets import load_dataset
    except ImportError:
        raise LexsemError(
            f"{spec.key}: loading {spec.repo} from the Hub needs the `datasets` package "
            "(pip install datasets), or pass data_dir= a folder with its parquet files"
        ) from None
    return load_dataset  # type: ignore[no-any-return]


def _hub_error(spec: HFDataset, exc: Exception, looked: Sequence[Path]) -> LexsemError | None:
    """The error to raise for a failed Hub call when it is a refusal (gated) or no network;
    None for other failures. A refusal is an answer from the Hub: it is checked first."""
    text = f"{type(exc).__name__}: {exc}"
    if any(m in text.lower() for m in _GATED_MARKERS):
        return LexsemError(f"{_gated_message(spec, looked)} (Hub said: {text})")
    if hf_hub.is_network_error(exc):
        return LexsemError(
            hf_hub.no_network_message(spec.key, spec.repo, text, looked, gated=spec.gated)
        )
    return None


def _hub_dataset(
    spec: HFDataset,
    split: str,
    token: str | None,
    revision: str | None,
    load_dataset: LoadDataset | None,
    looked: Sequence[Path] = (),
) -> Any:
    """The dataset from the Hub. With the real `datasets` (no `load_dataset` given) the Hub is
    probed first (`hf_hub.unreachable`, a few seconds at most): no network is said as such,
    before any word about tokens."""
    if load_dataset is None:
        load_dataset = _datasets_loader(spec)
        why = hf_hub.unreachable(hf_hub.endpoint())
        if why is not None:
            raise LexsemError(
                hf_hub.no_network_message(spec.key, spec.repo, why, looked, gated=spec.gated)
            )
    if spec.gated and not token:
        raise LexsemError(_gated_message(spec, looked))
    kwargs: dict[str, Any] = {"split": split, "token": token}
    if revision:
        kwargs["revision"] = revision
    try:
        return load_dataset(spec.repo, **kwargs)
    except Exception as exc:
        known = _hub_error(spec, exc, looked)
        if known is not None:
            raise known from exc
        if "scripts are no longer supported" in str(exc).lower() and not revision:
            return _parquet_export(spec, load_dataset, kwargs, looked)
        text = f"{type(exc).__name__}: {exc}"
        raise LexsemError(f"{spec.key}: cannot load {spec.repo} from the Hub ({text})") from exc


def _parquet_export(
    spec: HFDataset, load_dataset: LoadDataset, kwargs: dict[str, Any], looked: Sequence[Path]
) -> Any:
    """Script-based repos (Winoground): the Hub keeps a parquet export of them."""
    try:
        return load_dataset(spec.repo, **kwargs, revision="refs/convert/parquet")
    except Exception as exc:
        known = _hub_error(spec, exc, looked)
        if known is not None:
            raise known from exc
        raise LexsemError(
            f"{spec.key}: cannot load {spec.repo} (a script dataset; its parquet export "
            f"failed too: {type(exc).__name__}: {exc}); download the parquet files and "
            "pass data_dir="
        ) from exc


def snapshot_folders(spec: HFDataset, data_root: str | Path | None = None) -> list[Path]:
    """Where lexsem looks for an offline snapshot of `spec`, in order: ``<data_root>/hf/<repo>``
    (`data_root`: ``--data-dir``), then ``$LEXSEM_DATA_DIR/hf/<repo>``."""
    roots = [Path(data_root).expanduser()] if data_root is not None else []
    env = paths.data_dir()
    if env is not None:
        roots.append(env)
    return list(dict.fromkeys(r / "hf" / spec.repo for r in roots))


def _snapshot_root(data_dir: Path) -> Path:
    """The folder image paths in the files of `data_dir` must stay in: `data_dir` itself, or
    the folder of a single parquet file."""
    return data_dir if data_dir.is_dir() else data_dir.parent


def load_hf_benchmark(
    dataset: str | HFDataset,
    *,
    data_dir: str | Path | None = None,
    data_root: str | Path | None = None,
    split: str | None = None,
    token: str | None = None,
    revision: str | None = None,
    strict: bool = True,
    crop: bool = True,
    load_dataset: LoadDataset | None = None,
) -> HFLoadResult:
    """Load one HF-hosted benchmark (a key of `HF_DATASETS`, or a custom `HFDataset`).

    `data_dir`: a folder of parquet files (or one file) to read instead of the Hub; image paths
    stored in the files are read only inside it.
    `data_root`: lexsem's data folder (``--data-dir``): without `data_dir`, the snapshot
    ``<data_root>/hf/<repo>`` is used when it exists, then ``$LEXSEM_DATA_DIR/hf/<repo>``, then
    the Hub (`snapshot_folders`); errors name the folders looked in.
    `token`: Hub token; default `$HF_TOKEN` / `$HUGGING_FACE_HUB_TOKEN` / the stored login.
    `strict`: empty captions are errors (False: kept, for `lexsem validate`).
    `crop`: crop ARO VG images to the item's box (the reference protocol).
    `load_dataset`: replaces `datasets.load_dataset` (tests; the Hub is then not probed).
    """
    spec = get_hf_dataset(dataset) if isinstance(dataset, str) else dataset
    split = split or spec.split
    looked = snapshot_folders(spec, data_root)
    if data_dir is None:
        data_dir = next((p for p in looked if p.is_dir()), None)
    files: tuple[Path, ...] = ()
    src: _Source
    if data_dir is not None:
        files = tuple(find_parquet_files(data_dir, split, key=spec.key))
        src = _ParquetSource(files, spec.key, _snapshot_root(Path(data_dir).expanduser()))
        label = src.label
    else:
        if paths.offline():
            raise LexsemError(
                f"{spec.key}: offline ($LEXSEM_OFFLINE / $HF_HUB_OFFLINE) and no data folder: "
                f"{hf_hub.snapshot_hint(spec.repo, looked)}; or give the folder with "
                "--data-dir DIR (data_dir=DIR in Python)"
            )
        token = token or stored_token()
        ds = _hub_dataset(spec, split, token, revision, load_dataset, looked)
        label = f"hf:{spec.repo}[{split}]"
        src = _HFSource(ds, spec.key, label)
    crops: dict[str, BBox] = {}
    if isinstance(spec.fields, QuadFields):
        items, refs = _quad_items(spec, spec.fields, src, split, strict)
    else:
        items, refs, crops = _multi_items(spec, spec.fields, src, split, strict, crop)
    store = HFImageStore(spec, split, src, refs, crops)
    register_store(store)
    return HFLoadResult(spec, split, items, store, label, files)


def load_bivlc(**kwargs: Any) -> HFLoadResult:
    """BiVLC (imirandam/BiVLC, test, 2933 quads); kwargs as `load_hf_benchmark`."""
    return load_hf_benchmark("bivlc", **kwargs)


def load_winoground(**kwargs: Any) -> HFLoadResult:
    """Winoground (facebook/winoground, gated, test, 400 quads); kwargs as `load_hf_benchmark`."""
    return load_hf_benchmark("winoground", **kwargs)


ARO_SUBSETS: dict[str, str] = {
    "vg_relation": "aro_vg_relation",
    "vg_attribution": "aro_vg_attribution",
    "coco_order": "aro_coco_order",
    "flickr30k_order": "aro_flickr30k_order",
}


def load_aro(subset: str, **kwargs: Any) -> HFLoadResult:
    """One ARO benchmark: vg_relation, vg_attribution, coco_order or flickr30k_order."""
    try:
        key = ARO_SUBSETS[subset]
    except KeyError:
        raise LexsemError(
            f"unknown ARO subset {subset!r}; known: {', '.join(ARO_SUBSETS)}"
        ) from None
    return load_hf_benchmark(key, **kwargs)

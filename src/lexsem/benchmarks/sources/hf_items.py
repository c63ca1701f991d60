"""Rows of a Hugging Face dataset → lexsem items, through the dataset's field mapping
(`hf_dataset.QuadFields` / `MultiFields`).

A missing column or a null / non-text value raises `DataError` naming the dataset, the file (or
Hub id), the row and the field; with `strict`, so does an empty caption.
"""

from __future__ import annotations

from typing import Any

from lexsem.benchmarks import ids
from lexsem.benchmarks.items import MultiCaptionItem, QuadItem
from lexsem.benchmarks.sources.hf_dataset import HFDataset, MultiFields, QuadFields
from lexsem.benchmarks.sources.hf_images import BBox, image_ref
from lexsem.benchmarks.sources.hf_rows import RowSource
from lexsem.errors import DataError


def _where(src: RowSource, row: int) -> dict[str, Any]:
    return {"file": src.label, "item": f"row {row}"}


def _text(rec: dict[str, Any], col: str, key: str, src: RowSource, row: int, strict: bool) -> str:
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


def _item_id(rec: dict[str, Any], col: str | None, key: str, src: RowSource, row: int) -> str:
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


def _bbox(v: Any, col: str, key: str, src: RowSource, row: int) -> BBox:
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


def quad_items(
    spec: HFDataset, f: QuadFields, src: RowSource, split: str, strict: bool
) -> tuple[list[QuadItem], list[str]]:
    """A `QuadItem` per row, and the image refs of all rows."""
    cols = [f.caption0, f.caption1, *f.groups, *f.subset]
    if f.id:
        cols.append(f.id)
    src.check_columns(list(dict.fromkeys([f.image0, f.image1, *cols])))  # all missing at once
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


def multi_items(
    spec: HFDataset, f: MultiFields, src: RowSource, split: str, strict: bool, crop: bool
) -> tuple[list[MultiCaptionItem], list[str], dict[str, BBox]]:
    """A `MultiCaptionItem` per row, the image refs, and (with `crop` and a box column) the
    crop box of each ref."""
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
    src.check_columns([f.image])
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

"""Loaders: public benchmark files -> typed items.

Structural problems (undecodable bytes, malformed JSON/TSV, missing fields or columns) always
raise a `DataError` naming the file and the line, row or item, as do item ids that are null,
NaN or empty and a key repeated within one JSON object. Every field an item lacks is named in
one error, with how many other items lack fields. Empty or whitespace-only texts raise too when
`strict` (evaluation); `lexsem validate` loads with `strict=False` and reports them.

The image reference (`filename`, VISLA's `filename` / `image` column) may be left out: the item
then has no image, which text-only tasks never need and image tasks report by item
(`engine/plan.py`). docs/extending.md shows a minimal file of each format.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from lexsem.benchmarks.ids import item_id
from lexsem.benchmarks.items import PairItem, TripletItem
from lexsem.errors import DataError
from lexsem.jsonl import read_text


class DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict; a key given twice is an error (json keeps only the last)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def read_json(path: Path) -> Any:
    """A JSON file (`lexsem.jsonl.read_json`: malformed or too deeply nested JSON is an error
    naming the file); a key repeated within one object (SugarCrepe's item ids: a reader would
    silently keep only the last item) is an error naming the file and the key."""
    from lexsem.jsonl import read_json as read_json_file

    try:
        return read_json_file(path, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise DataError(
            f"the key {exc.key!r} appears twice in one JSON object (a reader keeps only the "
            "last one: an item would be lost silently)",
            file=path,
            item=exc.key,
        ) from None


def _text_field(
    record: dict[str, Any],
    key: str,
    *,
    path: Path,
    item: str,
    strict: bool,
    line: int | None = None,
) -> str:
    if key not in record:
        raise DataError(f"missing field {key!r}", file=path, line=line, item=item)
    value = record[key]
    if not isinstance(value, str):
        raise DataError(
            f"field {key!r} must be a string, got {type(value).__name__}",
            file=path,
            line=line,
            item=item,
        )
    if strict and not value.strip():
        raise DataError(
            f"field {key!r} is empty; run `lexsem validate` for a full report",
            file=path,
            line=line,
            item=item,
        )
    return value


def check_fields(
    records: list[tuple[str, Any]], fields: tuple[str, ...], path: Path, *, what: str = "field"
) -> None:
    """Raise one DataError naming every one of `fields` the first incomplete record lacks (and
    the fields it has), and how many other records lack any; `records` holds (item, record)
    pairs, records that are not JSON objects are skipped (their own check names them)."""
    incomplete = [
        (item, rec, [k for k in fields if k not in rec])
        for item, rec in records
        if isinstance(rec, dict) and any(k not in rec for k in fields)
    ]
    if not incomplete:
        return
    item, rec, missing = incomplete[0]
    others = len(incomplete) - 1
    more = f"; {others} other item(s) lack fields too" if others else ""
    plural = "s" if len(missing) > 1 else ""
    raise DataError(
        f"missing {what}{plural} {', '.join(map(repr, missing))} (it has "
        f"{', '.join(map(repr, rec)) or 'none'}; each item needs {', '.join(fields)}){more}",
        file=path,
        item=item,
    )


def _image_field(record: dict[str, Any], key: str, *, path: Path, item: str) -> str | None:
    """The optional image reference: absent or null → None (a text-only item)."""
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataError(
            f"field {key!r} must be a string, got {type(value).__name__}", file=path, item=item
        )
    return value


SUGARCREPE_FIELDS = ("caption", "negative_caption")
SCPP_FIELDS = ("id", "caption", "caption2", "negative_caption")


def load_sugarcrepe_json(path: Path, subset: str, *, strict: bool = True) -> list[PairItem]:
    """SugarCrepe: `{"0": {"filename", "caption", "negative_caption"}, ...}` (`filename`
    optional)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(f"expected a JSON object of items, got {type(data).__name__}", file=path)
    check_fields([(str(k), rec) for k, rec in data.items()], SUGARCREPE_FIELDS, path)
    items = []
    for key, rec in data.items():
        if not isinstance(rec, dict):
            raise DataError("item is not a JSON object", file=path, item=key)
        f = {
            k: _text_field(rec, k, path=path, item=key, strict=strict)
            for k in ("caption", "negative_caption")
        }
        image = _image_field(rec, "filename", path=path, item=key)
        items.append(PairItem(str(key), subset, image, f["caption"], f["negative_caption"]))
    return items


def _scpp_label(pos: int, record: Any) -> str:
    """How an error names a SugarCrepe++ record: its id when it has a usable one, else `#pos`."""
    if isinstance(record, dict) and "id" in record:
        try:
            return item_id(record["id"])
        except ValueError:
            pass
    return f"#{pos}"


def load_scpp_json(path: Path, subset: str, *, strict: bool = True) -> list[TripletItem]:
    """SugarCrepe++: `[{"id", "filename", "caption", "caption2", "negative_caption"}, ...]`
    (`filename` optional)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"expected a JSON list of items, got {type(data).__name__}", file=path)
    labels = [_scpp_label(pos, rec) for pos, rec in enumerate(data)]
    check_fields(list(zip(labels, data, strict=True)), SCPP_FIELDS, path)
    items = []
    for pos, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise DataError(f"item #{pos} is not a JSON object", file=path, item=str(pos))
        if "id" not in rec:
            raise DataError(f"item #{pos}: missing field 'id'", file=path, item=str(pos))
        try:
            key = item_id(rec["id"])
        except ValueError as exc:
            raise DataError(f"item #{pos}: {exc}", file=path, item=str(pos)) from None
        f = {
            k: _text_field(rec, k, path=path, item=key, strict=strict)
            for k in ("caption", "caption2", "negative_caption")
        }
        image = _image_field(rec, "filename", path=path, item=key)
        items.append(
            TripletItem(key, subset, image, f["caption"], f["caption2"], f["negative_caption"])
        )
    return items


def read_tsv(path: Path, columns: list[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a tab-separated file with a header, as (line number, {column: value}).

    Quotes are literal (no CSV quoting), as in the public files. Every row must have exactly as
    many fields as the header; the named `columns` must be present (all missing ones are named
    in one error).
    """
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    try:
        header = next(reader)
    except StopIteration:
        raise DataError("empty file (no header row)", file=path, line=1) from None
    header = [h.strip() for h in header]
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataError(f"missing column(s) {missing}; header has {header}", file=path, line=1)
    rows = []
    for row in reader:
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        if len(row) != len(header):
            raise DataError(
                f"expected {len(header)} tab-separated fields, found {len(row)}",
                file=path,
                line=line,
            )
        rows.append((line, dict(zip(header, row, strict=True))))
    return rows


def _tsv_triplets(
    path: Path, subset: str, cols: tuple[str, str, str, str], *, strict: bool
) -> list[TripletItem]:
    image, c1, c2, cn = cols
    items = []
    for idx, (line, row) in enumerate(read_tsv(path, [c1, c2, cn])):
        key = str(idx)
        f = {
            k: _text_field(row, k, path=path, item=key, strict=strict, line=line)
            for k in (c1, c2, cn)
        }
        items.append(TripletItem(key, subset, row.get(image) or None, f[c1], f[c2], f[cn]))
    return items


VISLA_GENERIC_COLUMNS = ("filename", "caption", "second positive", "negative_caption")
VISLA_SPATIAL_COLUMNS = ("image", "sent1", "sent2", "Best reference (Semantically close)")


def load_visla_generic_tsv(path: Path, subset: str, *, strict: bool = True) -> list[TripletItem]:
    """VISLA generic: columns filename (optional), caption (P1), second positive (P2),
    negative_caption (N)."""
    return _tsv_triplets(path, subset, VISLA_GENERIC_COLUMNS, strict=strict)


def load_visla_spatial_tsv(path: Path, subset: str, *, strict: bool = True) -> list[TripletItem]:
    """VISLA spatial: image (optional), sent1 (P1), sent2 (P2), Best reference (N); Reference-2
    is unused."""
    return _tsv_triplets(path, subset, VISLA_SPATIAL_COLUMNS, strict=strict)

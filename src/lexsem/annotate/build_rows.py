"""A build stage's Parquet output (`lexsem build`, docs/building.md) → study queries: the
human steps of dataset construction.

- ``validate``: accept / edit / reject a generated caption (SugarCrepe++ §2.1 second
  positives; VISLA §3.3 negatives; SugarCrepe's hard negatives). Columns: ``original`` (P1,
  default ``caption``), ``generated`` (the text to check: default ``caption2``, a second
  positive P2; or a negative shown with P2, VISLA's ``n``), ``positive`` (optional, default
  ``p2``: the second positive P2 shown where the text to check is a negative), ``negative``
  (optional, no default: the text to check is this column, a negative shown without P2, e.g.
  SugarCrepe's ``negative_caption``; it takes the place of ``generated``), ``image``
  (optional, default ``image``; shown only where the text to check is a negative beside P1
  alone: a second positive, or a negative beside P1 and P2, is judged from the texts, so those
  studies are text-only and read no image unless ``image`` is named; an empty name, none).
- ``best_of_k``: choose the best of K generated images or none (BiVLC §3 step 3). Columns:
  ``caption`` (default ``negative_caption``), ``images`` (default ``images``: a list of paths).
- ``ambiguity``: the original caption and both images (BiVLC §3 step 4). Columns: ``caption``
  (default ``caption``), ``image0`` (default ``image``), ``image1`` (default ``negative_image``).

A row's item id is ``source:source_id`` (its provenance; rows sharing one get ``/1``, ``/2``,
..., `lexsem.construct.stage.row_ids`); rows a stage rejected (a non-null
``rejected``) are left out; ``subset`` is the row's ``subset`` column where there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lexsem.annotate.kinds import Option, Query
from lexsem.errors import DataError, LexsemError

__all__ = ["BUILD_KINDS", "DEFAULT_COLUMNS", "build_queries", "row_subset"]

DEFAULT_COLUMNS: dict[str, dict[str, str]] = {
    "validate": {
        "original": "caption",
        "generated": "caption2",
        "positive": "p2",
        "negative": "",
        "image": "image",
    },
    "best_of_k": {"caption": "negative_caption", "images": "images"},
    "ambiguity": {"caption": "caption", "image0": "image", "image1": "negative_image"},
}
BUILD_KINDS = tuple(DEFAULT_COLUMNS)
_OPTIONAL = {("validate", "image"), ("validate", "positive")}
_NEGATIVE = {("validate", "negative")}


def _judged_on_image(cols: Mapping[str, str], present: set[str]) -> bool:
    """Whether a validate study of these rows shows their image: only where the text checked
    is a negative shown beside P1 alone (SugarCrepe's: is it false of the image?). A second
    positive (P2 beside P1, SugarCrepe++) and a negative beside P1 and P2 (VISLA) are judged
    from the texts."""
    beside_p2 = cols["positive"] in present and cols["positive"] != cols["generated"]
    return bool(cols["negative"]) and not beside_p2


def build_queries(
    rows: list[dict[str, Any]],
    kind: str,
    benchmark: str,
    image: Callable[[str], str],
    *,
    file: Path,
    columns: Mapping[str, str] | None = None,
    ids: Sequence[str] | None = None,
) -> list[Query]:
    """The queries of `kind` for the accepted rows of a build stage's table (`rows` as
    `pyarrow.Table.to_pylist()`), columns named by role (`columns` overrides the defaults);
    `ids`: each row's item id (default ``source:source_id``)."""
    if kind not in DEFAULT_COLUMNS:
        raise LexsemError(
            f"{file}: a build table gives task kinds {', '.join(BUILD_KINDS)}, not {kind!r}"
        )
    cols = {**DEFAULT_COLUMNS[kind], **(columns or {})}
    unknown = set(columns or {}) - set(DEFAULT_COLUMNS[kind])
    if unknown:
        raise LexsemError(
            f"--column {sorted(unknown)[0]}: task kind {kind!r} has the columns "
            f"{', '.join(DEFAULT_COLUMNS[kind])}"
        )
    negative = kind == "validate" and bool(cols["negative"])
    if negative and "generated" in (columns or {}):
        raise LexsemError("--column negative: the text to check is the negative; give it or "
                          "--column generated, not both")  # fmt: skip
    present = set(rows[0]) if rows else set()
    for role, name in cols.items():
        if not name and role in (columns or {}) and (kind, role) not in _OPTIONAL | _NEGATIVE:
            raise LexsemError(f"--column {role}=: task kind {kind!r} needs a column for {role}")
        if not name or (negative and role == "generated"):  # validate's `negative` not given,
            continue  # or given in place of `generated`
        if rows and name not in present and (kind, role) not in _OPTIONAL:
            raise DataError(
                f"no column {name!r} ({kind} {role}; columns: {', '.join(sorted(present))}); "
                f"name it with --column {role}=NAME",
                file=file,
            )
    if negative:
        cols["generated"] = cols["negative"]
    if (
        kind == "validate"
        and "image" not in (columns or {})
        and not _judged_on_image(cols, present)
    ):
        cols["image"] = ""  # text-only: no image read
    out = []
    for i, row in enumerate(rows, start=1):
        if row.get("rejected") is not None:
            continue
        item = (
            ids[i - 1]
            if ids is not None
            else f"{row.get('source', 'row')}:{row.get('source_id', i)}"
        )
        out.append(_MAKERS[kind](row, cols, item, row_subset(row), benchmark, image, file, i))
    if not out:
        raise DataError("no accepted rows", file=file)
    return out


def row_subset(row: Mapping[str, Any]) -> str:
    """A row's subset: its ``subset`` column, ``all`` where it has none."""
    return str(row.get("subset") or "all")


def _text(row: Mapping[str, Any], col: str, file: Path, line: int) -> str:
    value = row.get(col)
    if not isinstance(value, str) or not value.strip():
        raise DataError(
            f"column {col!r} must be a non-empty text, got {value!r}", file=file, line=line
        )
    return value


def _validate(row, cols, item, subset, bench, image, file, line) -> Query:  # type: ignore[no-untyped-def]
    original = _text(row, cols["original"], file, line)
    generated = _text(row, cols["generated"], file, line)
    ref = row.get(cols["image"])
    sha = image(ref) if isinstance(ref, str) and ref else None
    second = row.get(cols["positive"]) if cols["positive"] != cols["generated"] else None
    negative = (f"N (negative, {cols['generated']}): to check", generated)
    if isinstance(second, str) and second.strip():  # a negative beside P2 (VISLA's)
        ctx = (("P1 (original)", original), ("P2 (second positive)", second), negative)
    elif cols["negative"]:  # a negative without a second positive (SugarCrepe's)
        ctx = (("P1 (original)", original), negative)
    else:
        ctx = (("P1 (original)", original),
               (f"P2 (generated second positive, {cols['generated']}): to check",
                generated))  # fmt: skip
    return Query(
        "validate", item, subset, bench, (), None, base_image=sha, context=ctx, edit_text=generated
    )


def _best_of_k(row, cols, item, subset, bench, image, file, line) -> Query:  # type: ignore[no-untyped-def]
    caption = _text(row, cols["caption"], file, line)
    refs = row.get(cols["images"])
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        raise DataError(
            f"column {cols['images']!r} must be a non-empty list of image paths, got {refs!r}",
            file=file, line=line,
        )  # fmt: skip
    opts = tuple(Option(f"image{k}", image=image(r)) for k, r in enumerate(refs))
    return Query("best_of_k", item, subset, bench, opts, None, base_text=caption)


def _ambiguity(row, cols, item, subset, bench, image, file, line) -> Query:  # type: ignore[no-untyped-def]
    caption = _text(row, cols["caption"], file, line)
    opts = tuple(
        Option(f"image{k}", image=image(_text(row, cols[f"image{k}"], file, line))) for k in (0, 1)
    )
    return Query("ambiguity", item, subset, bench, opts, None, base_text=caption)


_MAKERS = {"validate": _validate, "best_of_k": _best_of_k, "ambiguity": _ambiguity}

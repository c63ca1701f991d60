"""Stage `caption_format`: BiVLC's caption formatting (BiVLC, §3, step 1: "the first letter
is capitalised, the rest is lower case except for named entities, and a final punctuation mark
is added").

lexsem detects no named entities, so it lowers nothing: the first letter (after leading
spaces) is made upper case, the rest is kept as it is, and `punctuation` is appended when the
caption does not already end in one of ``.!?``. Leading and trailing spaces are removed. A row
whose caption is empty is rejected (``empty caption``). docs/fidelity.md records the
difference from the paper (no lower-casing).
"""

from __future__ import annotations

from typing import Any

from lexsem.construct.stage import Stage, StageContext, accepted, reject
from lexsem.errors import LexsemError

__all__ = ["caption_format", "format_caption"]

FINAL = (".", "!", "?")


def format_caption(text: str, punctuation: str = ".") -> str:
    """`text` formatted as the module doc says ("" for an empty caption)."""
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith(FINAL) else text + punctuation


def caption_format(
    rows: Any, ctx: StageContext | None, *, column: str = "caption", punctuation: str = "."
) -> Any:
    """Format the captions of `column` in the accepted rows (see the module doc)."""
    import pyarrow as pa

    if column not in rows.column_names:
        raise LexsemError(f"caption_format: the rows have no column {column!r}")
    if punctuation not in FINAL:
        raise LexsemError(
            f"caption_format: punctuation must be one of {FINAL}, not {punctuation!r}"
        )
    keep = accepted(rows).to_pylist()
    texts = rows[column].to_pylist()
    out, reasons = [], []
    for ok, text in zip(keep, texts, strict=True):
        formatted = format_caption(text or "", punctuation) if ok else text
        out.append(formatted)
        reasons.append("empty caption" if ok and not formatted else None)
    rows = rows.set_column(rows.column_names.index(column), column, pa.array(out, pa.string()))
    if ctx is not None:
        ctx.count("changed", sum(a != b for a, b in zip(out, texts, strict=True)))
    return reject(rows, reasons)


STAGE = Stage("caption_format", caption_format)

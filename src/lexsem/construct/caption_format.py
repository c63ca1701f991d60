"""Stage `caption_format`: BiVLC's caption formatting (BiVLC, §3, step 1: "the first letter
is capitalised, the rest is lower case except for named entities, and a final punctuation mark
is added").

BiVLC's script (IMirandaM/BiVLC, src/BiVLC_Generation/BiVLC_img_generation.py) lowers a caption
only when it is all upper case (Python's `str.isupper`; then `str.capitalize`), otherwise makes
the first character upper case and keeps the rest, and adds a "." to every caption that does not
end with "." (so "... frisbee?" becomes "... frisbee?."). lexsem does the same by default:
`lower_all_caps` (true) and `keep_marks` (".", the final marks after which nothing is added;
".!?" adds none after "!" or "?"). The script also drops the space after a one-letter first word
("A dog" → "Adog", its `x[:1].upper() + x[1:].strip()`); lexsem does not copy that, and removes
leading and trailing spaces before formatting. A row whose caption is empty is rejected
(``empty caption``). docs/fidelity.md records the differences from the paper and the script.
"""

from __future__ import annotations

from typing import Any

from lexsem.construct.stage import Columns, Stage, StageContext, accepted, reject
from lexsem.errors import LexsemError

__all__ = ["caption_format", "format_caption"]

FINAL = (".", "!", "?")


def format_caption(
    text: str, punctuation: str = ".", lower_all_caps: bool = True, keep_marks: str = "."
) -> str:
    """`text` formatted as the module doc says ("" for an empty caption)."""
    text = text.strip()
    if not text:
        return ""
    lowered = lower_all_caps and text.isupper()
    text = text.capitalize() if lowered else text[0].upper() + text[1:]
    return text if text.endswith(tuple(keep_marks)) else text + punctuation


def caption_format(
    rows: Any,
    ctx: StageContext | None,
    *,
    column: str = "caption",
    punctuation: str = ".",
    lower_all_caps: bool = True,
    keep_marks: str = ".",
) -> Any:
    """Format the captions of `column` in the accepted rows (see the module doc)."""
    import pyarrow as pa

    if not isinstance(lower_all_caps, bool):
        raise LexsemError(
            f"caption_format: lower_all_caps is true or false, not {lower_all_caps!r}"
        )
    if not isinstance(keep_marks, str) or not keep_marks or any(m not in FINAL for m in keep_marks):
        raise LexsemError(
            f"caption_format: keep_marks is one or more of {''.join(FINAL)}, not {keep_marks!r}"
        )

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
        formatted = (
            format_caption(text or "", punctuation, lower_all_caps, keep_marks) if ok else text
        )
        out.append(formatted)
        reasons.append("empty caption" if ok and not formatted else None)
    rows = rows.set_column(rows.column_names.index(column), column, pa.array(out, pa.string()))
    if ctx is not None:
        ctx.count("changed", sum(a != b for a, b in zip(out, texts, strict=True)))
    return reject(rows, reasons)


def _columns(have: frozenset[str], *, column: str = "caption", **_: Any) -> Columns:
    return Columns({"column": column})


STAGE = Stage("caption_format", caption_format, columns=_columns)

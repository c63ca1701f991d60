"""TROHN-Img's deduplication and cleaning of negative captions: a build stage.

"BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval"
(Miranda et al., 2024), §5.2, step 2: "We remove duplicate negative captions, captions in the
form of questions, and generations that do not end with a final punctuation mark." BiVLC's
script (IMirandaM/BiVLC, src/Training_data/TROHN_Img/TROHN_Img_best_selection.py) keeps a
negative only when it ends with "." and is longer than 10 characters, drops a negative equal to
an earlier one once every "." is removed, and, after the adversarial refinement, writes both
captions stripped, with Python's `str.capitalize` (the first letter upper case, every other
lower case) and a final "." added where missing (docs/fidelity.md, "Building: TROHN selection
and cleaning").

The checks read the negative as it is, as the script does (a negative ending in ". " does not
end with "."; the characters counted include its spaces); ``strip = true`` checks it stripped
instead. Reasons, in the order checked: `QUESTION` (the negative ends with "?"), `NO_END` (it
ends with none of `end`), `SHORT` (fewer than `min_chars` characters), `DUPLICATE` (its text
without "." equals an earlier accepted row's, in row order). Accepted rows then get both
captions formatted (`format_caption`); rejected rows pass through unchanged.

The script formats the captions after the refinement, and its image prompts are made from the
unformatted negatives; a recipe does the same with two stages of this kind: ``format = false``
before the refinement and ``check = false`` after the images (recipes/trohn_img.toml).
"""

from __future__ import annotations

import pyarrow as pa

from lexsem.construct.stage import Stage, accepted, reject
from lexsem.errors import DataError

__all__ = ["DUPLICATE", "NO_END", "QUESTION", "SHORT", "clean_captions", "format_caption"]

QUESTION = "clean: a question"
NO_END = "clean: no final punctuation"
SHORT = "clean: too short"
DUPLICATE = "clean: duplicate negative"

CASES = ("capitalize", "first", "keep")


def format_caption(text: str, case: str = "capitalize", end: str = ".") -> str:
    """`text` stripped, its case set (`capitalize`: `str.capitalize`, as BiVLC's script;
    `first`: the first character upper case, the rest unchanged; `keep`), and the first mark
    of `end` added when it ends with none of them."""
    text = text.strip()
    if case == "capitalize":
        text = text.capitalize()
    elif case == "first":
        text = text[:1].upper() + text[1:]
    return text if text and text[-1] in end else text + end[0]


def clean_captions(
    rows: pa.Table,
    ctx: object | None = None,
    *,
    positive: str = "caption",
    negative: str = "negative_caption",
    end: str = ".",
    min_chars: int = 11,
    dedupe: bool = True,
    case: str = "capitalize",
    strip: bool = False,
    check: bool = True,
    format: bool = True,
) -> pa.Table:
    """Reject questions, negatives without a final mark in `end` (each character one mark),
    shorter than `min_chars` or duplicated (`check`); format both captions of the others
    (`format`); module docstring. The defaults are BiVLC's script's. `ctx` is not used."""
    del ctx
    for name, flag in (("strip", strip), ("check", check), ("format", format)):
        if not isinstance(flag, bool):
            raise DataError(f"clean_captions: {name} is true or false, got {flag!r}")
    if case not in CASES:
        raise DataError(f"clean_captions: case is one of {', '.join(CASES)}, got {case!r}")
    if not isinstance(end, str) or not end:
        raise DataError(f"clean_captions: end is one or more characters, got {end!r}")
    if isinstance(min_chars, bool) or not isinstance(min_chars, int) or min_chars < 0:
        raise DataError(f"clean_captions: min_chars is an integer >= 0, got {min_chars!r}")
    for name in (positive, negative):
        if name not in rows.column_names:
            raise DataError(
                f"clean_captions: no column {name!r}; the rows have {', '.join(rows.column_names)}"
            )
    pos, neg = rows[positive].to_pylist(), rows[negative].to_pylist()
    ids = rows["source_id"].to_pylist()
    keep = accepted(rows).to_pylist()
    reasons: list[str | None] = [None] * rows.num_rows
    seen: set[str] = set()
    for r, ok in enumerate(keep):
        if not ok or not check:
            continue
        p, n = pos[r], neg[r]
        if not (isinstance(p, str) and isinstance(n, str)):
            raise DataError(
                f"clean_captions: {positive!r} and {negative!r} must be text", item=str(ids[r])
            )
        text = n.strip() if strip else n
        if text.endswith("?"):
            reasons[r] = QUESTION
        elif not text or text[-1] not in end:
            reasons[r] = NO_END
        elif len(text) < min_chars:
            reasons[r] = SHORT
        elif dedupe:
            key = text.replace(".", "")
            if key in seen:
                reasons[r] = DUPLICATE
            seen.add(key)
    rows = reject(rows, reasons)
    if not format:
        return rows
    final = accepted(rows).to_pylist()
    for name, values in ((positive, pos), (negative, neg)):
        formatted = [
            format_caption(v, case, end) if ok else v for v, ok in zip(values, final, strict=True)
        ]
        rows = rows.set_column(
            rows.column_names.index(name), name, pa.array(formatted, pa.string())
        )
    return rows


STAGE = Stage("clean_captions", clean_captions)

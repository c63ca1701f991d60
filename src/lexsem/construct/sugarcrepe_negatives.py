"""SugarCrepe-style hard negatives from a generator, one per (caption, category): a build stage.

"SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality" (Hsieh et al.,
2023), §3, and "BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image
Retrieval" (Miranda et al., 2024), §5.1 (TROHN-Text): for every caption and every category, an
LLM is asked with the category's template (`lexsem.construct.sugarcrepe_templates`) and the
negative caption is read from its structured answer.

Rendering and parsing follow BiVLC's script (IMirandaM/BiVLC,
src/Training_data/TROHN_Text/TROHN_Text_generation.py): the caption is stripped and its line
breaks made spaces; the conversation is the template's user and assistant turns and one user
turn with the caption. The script parses the whole decoded text (prompt and answer, in
OpenChat's chat format); lexsem parses the answer alone (docs/fidelity.md, "Building:
SugarCrepe-style negatives"):

- replace and add: the text after the answer's first ``New sentence: ``, up to the first line
  break;
- swap: the answer must start with ``Yes`` or `` Yes`` (at most one space before it, as the
  script's check of the text after "Correct Assistant:") and hold ``Output: ``; the negative is
  the text after the first ``Output: ``, up to the first line break.

The negative is kept as the script keeps it, with any white space around it (BiVLC's cleaning,
`lexsem.construct.clean_captions`, then drops a negative ending in ". " as not ending in a full
stop); the setting ``strip = true`` strips it. An answer that does not parse, or whose negative
is only white space, is kept as a rejected row with its reason (`NOT_YES`, `NO_MARKER`,
`EMPTY`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lexsem.construct.stage import Stage, StageContext, accepted
from lexsem.construct.sugarcrepe_templates import CATEGORIES, TEMPLATES
from lexsem.errors import DataError, LexsemError

__all__ = [
    "EMPTY",
    "NOT_YES",
    "NO_MARKER",
    "clean_input",
    "generation_request",
    "parse_negative",
    "sugarcrepe_negatives",
]

NOT_YES = "unparseable: the answer does not start with Yes"
NO_MARKER = "unparseable: no {marker!r} in the answer"
EMPTY = "unparseable: empty negative"

# Columns the stage adds.
OUT_COLUMNS = ("category", "negative_caption", "answer")


def clean_input(caption: str) -> str:
    """The caption as the script reads it: stripped, each line break a space."""
    return caption.strip().replace("\n", " ")


def generation_request(caption: str, category: str, params: Mapping[str, Any] | None = None) -> Any:
    """The conversation asking for `category`'s negative of `caption` (a `ChatRequest`: the
    template's user turn, its assistant turn, the user turn with the caption)."""
    from lexsem.models.chat import ChatRequest, Turn

    template = TEMPLATES[category]
    turns = (
        Turn("user", template.demonstration),
        Turn("assistant", template.answer),
        Turn("user", template.ask.format(caption=clean_input(caption))),
    )
    return ChatRequest(turns, dict(params or {}))


def parse_negative(
    category: str, answer: str, strip: bool = False
) -> tuple[str | None, str | None]:
    """(negative, None) read from a generator's `answer`, or (None, reason) when it does not
    parse (module docstring); `strip`: the negative without surrounding white space."""
    template = TEMPLATES[category]
    if template.needs_yes and not answer.startswith(("Yes", " Yes")):
        return None, NOT_YES
    _, found, rest = answer.partition(template.marker)
    if not found:
        return None, NO_MARKER.format(marker=template.marker)
    negative = rest.split("\n", 1)[0]
    if not negative.strip():
        return None, EMPTY
    return (negative.strip() if strip else negative), None


def _check(rows: pa.Table, column: str, categories: Sequence[str]) -> list[str]:
    unknown = [c for c in categories if c not in TEMPLATES]
    if unknown or not categories:
        raise LexsemError(
            f"sugarcrepe_negatives: categories are some of {', '.join(CATEGORIES)}; "
            f"got {list(categories)!r}"
        )
    if len(set(categories)) != len(categories):
        raise LexsemError(f"sugarcrepe_negatives: a category is named twice in {categories!r}")
    if column not in rows.column_names:
        raise DataError(
            f"sugarcrepe_negatives: no caption column {column!r}; the rows have "
            f"{', '.join(rows.column_names)}"
        )
    clash = [c for c in OUT_COLUMNS if c in rows.column_names]
    if clash:
        raise DataError(f"sugarcrepe_negatives: the rows already have column(s) {clash}")
    captions = rows[column].to_pylist()
    ids = rows["source_id"].to_pylist()
    for caption, ok, sid in zip(captions, accepted(rows).to_pylist(), ids, strict=True):
        if ok and (not isinstance(caption, str) or not caption.strip()):
            raise DataError(f"sugarcrepe_negatives: no caption text in {column!r}", item=str(sid))
    return captions


def _requests(
    rows: pa.Table,
    column: str = "caption",
    categories: Sequence[str] = CATEGORIES,
    params: Mapping[str, Any] | None = None,
    strip: bool = False,
) -> list[Any]:
    """Every request the stage asks: per category (in the given order), per accepted row
    (`strip` changes no request)."""
    del strip
    captions = _check(rows, column, categories)
    keep = accepted(rows).to_pylist()
    return [
        generation_request(captions[r], category, params)
        for category in categories
        for r in range(rows.num_rows)
        if keep[r]
    ]


def sugarcrepe_negatives(
    rows: pa.Table,
    ctx: StageContext,
    *,
    column: str = "caption",
    categories: Sequence[str] = CATEGORIES,
    params: Mapping[str, Any] | None = None,
    strip: bool = False,
) -> pa.Table:
    """One row per (accepted row, category): the row's columns, its caption cleaned
    (`clean_input`) in `column`, and `category`, `negative_caption` (null when the answer does
    not parse), `answer` (the generator's raw answer). Rows come category by category in the
    order of `categories` (the script's order by default), each in input order; rows rejected
    before come first, once each, unchanged but for null new columns. `params`: generation
    parameters sent (and keyed) with every request, e.g. ``{max_tokens = 350}``; `strip`: the
    negatives stripped of surrounding white space (default: kept as the script keeps them)."""
    if not isinstance(strip, bool):
        raise LexsemError(f"sugarcrepe_negatives: strip is true or false, got {strip!r}")
    categories = list(categories)
    _check(rows, column, categories)
    keep = accepted(rows).to_pylist()
    live = [r for r in range(rows.num_rows) if keep[r]]
    answers = ctx.ask(_requests(rows, column, categories, params)) if live else []

    order = [r for r in range(rows.num_rows) if not keep[r]]
    cats: list[str | None] = [None] * len(order)
    negatives: list[str | None] = [None] * len(order)
    raw: list[str | None] = [None] * len(order)
    reasons: list[str | None] = []
    old = rows["rejected"].to_pylist() if "rejected" in rows.column_names else None
    reasons.extend(old[r] if old else None for r in order)
    it = iter(answers)
    for category in categories:
        for r in live:
            answer = next(it)
            negative, reason = parse_negative(category, answer, strip)
            order.append(r)
            cats.append(category)
            negatives.append(negative)
            raw.append(answer)
            reasons.append(reason)
            if reason is not None:
                ctx.count(f"{category}: {reason}")
    out = rows.take(pa.array(order, pa.int64()))
    cleaned = [clean_input(c) if isinstance(c, str) else c for c in out[column].to_pylist()]
    out = out.set_column(out.column_names.index(column), column, pa.array(cleaned, pa.string()))
    for name, values in zip(OUT_COLUMNS, (cats, negatives, raw), strict=True):
        out = out.append_column(name, pa.array(values, pa.string()))
    column_reasons = pa.array(reasons, pa.string())
    if "rejected" in out.column_names:
        return out.set_column(out.column_names.index("rejected"), "rejected", column_reasons)
    return out.append_column("rejected", column_reasons)


STAGE = Stage("sugarcrepe_negatives", sugarcrepe_negatives, generator=True, requests=_requests)

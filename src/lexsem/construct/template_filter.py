"""The template-following filter of SugarCrepe-style negatives: a build stage.

"BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval"
(Miranda et al., 2024), §5.1: "We then defined a heuristic to filter out the generations that do
not follow the templates". BiVLC's released scripts apply two checks: the answer must parse
(`lexsem.construct.sugarcrepe_negatives` rejects the others) and the negative must differ from the
positive (TROHN_Img_best_selection.py drops pairs whose CLIP text similarity is 0.999 or more,
"the same" captions). Neither SugarCrepe's release nor BiVLC's checks the edit a category asks
for; lexsem does (docs/building.md, "SugarCrepe-style negatives"), on words: lower-cased runs
of letters, digits and apostrophes, without the articles "a", "an" and "the" (an added or
replaced noun often brings its own article: "on wall" → "on a bench").

- every category: the negative's words differ from the positive's (`SAME`);
- swap_obj, swap_att: the same words, each as often, in another order (`SWAP_WORDS`);
- add_obj, add_att: the positive's words with words inserted in exactly one place (`ADD`);
- replace_obj, replace_att, replace_rel: the positive's words with exactly one span replaced
  by another, nothing else changed (`REPLACE`).

"One place" is one non-equal block of `difflib.SequenceMatcher` over the two word lists.

``edit = false`` makes only the first check (`SAME`): BiVLC's script drops the unchanged
negatives before the percentile of §5.2 (the quantile is over the rows it keeps), and checks no
edit; trohn_img.toml runs that check before the percentile and the edit checks after it.
"""

from __future__ import annotations

import difflib
import re

import pyarrow as pa

from lexsem.construct.stage import Stage, accepted, reject
from lexsem.errors import DataError

__all__ = ["ADD", "REPLACE", "SAME", "SWAP_WORDS", "follows_template", "template_filter", "words"]

SAME = "template: same words as the positive"
SWAP_WORDS = "template: swap changes the words"
ADD = "template: add is not one insertion"
REPLACE = "template: replace is not one replacement"

ARTICLES = frozenset({"a", "an", "the"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(text: str) -> list[str]:
    """The words the filter compares: lower-cased, articles left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in ARTICLES]


def _edits(positive: list[str], negative: list[str]) -> list[str]:
    """The kinds of the non-equal blocks turning `positive` into `negative`."""
    matcher = difflib.SequenceMatcher(a=positive, b=negative, autojunk=False)
    return [op for op, *_ in matcher.get_opcodes() if op != "equal"]


def follows_template(category: str, positive: str, negative: str) -> str | None:
    """None when `negative` is the edit `category` asks of `positive`, else the reason."""
    pos, neg = words(positive), words(negative)
    if pos == neg:
        return SAME
    kind = category.split("_", 1)[0]
    if kind == "swap":
        return None if sorted(pos) == sorted(neg) else SWAP_WORDS
    edits = _edits(pos, neg)
    if kind == "add":
        return None if edits == ["insert"] else ADD
    if kind == "replace":
        return None if edits == ["replace"] else REPLACE
    raise DataError(f"template_filter: unknown category {category!r}")


def template_filter(
    rows: pa.Table,
    ctx: object | None = None,
    *,
    positive: str = "caption",
    negative: str = "negative_caption",
    category: str = "category",
    edit: bool = True,
) -> pa.Table:
    """Reject the accepted rows whose negative does not follow their category's template
    (module docstring; `edit` false: only the unchanged ones); rows keep their order and
    columns. `ctx` is not used."""
    del ctx
    if not isinstance(edit, bool):
        raise DataError(f"template_filter: edit is true or false, got {edit!r}")
    for name in (positive, negative, category):
        if name not in rows.column_names:
            raise DataError(
                f"template_filter: no column {name!r}; the rows have {', '.join(rows.column_names)}"
            )
    pos, neg = rows[positive].to_pylist(), rows[negative].to_pylist()
    cats, ids = rows[category].to_pylist(), rows["source_id"].to_pylist()
    reasons: list[str | None] = []
    for ok, p, n, c, sid in zip(accepted(rows).to_pylist(), pos, neg, cats, ids, strict=True):
        if not ok:
            reasons.append(None)
            continue
        if not all(isinstance(v, str) for v in (p, n, c)):
            raise DataError(
                f"template_filter: {positive!r}, {negative!r} and {category!r} must be text",
                item=str(sid),
            )
        reason = follows_template(c, p, n)
        reasons.append(reason if edit or reason == SAME else None)
    return reject(rows, reasons)


STAGE = Stage("template_filter", template_filter)

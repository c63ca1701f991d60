"""A build stage of the example plugin.

`shout_captions`: the accepted rows' captions upper-cased, and captions of fewer than
`min_words` words rejected (the reason kept in the `rejected` column).
"""

from __future__ import annotations

import pyarrow as pa

from lexsem.construct.stage import Columns, Stage, StageContext, accepted, reject


def shout_captions(
    rows: pa.Table, ctx: StageContext, *, column: str = "caption", min_words: int = 2
) -> pa.Table:
    """Upper-case `column` of the accepted rows; reject those of fewer than `min_words` words."""
    keep = accepted(rows).to_pylist()
    texts = rows[column].to_pylist()
    loud = [t.upper() if ok else t for t, ok in zip(texts, keep, strict=True)]
    rows = rows.set_column(rows.column_names.index(column), column, pa.array(loud, pa.string()))
    ctx.count("shouted", sum(keep))
    short = [ok and len(t.split()) < min_words for t, ok in zip(texts, keep, strict=True)]
    return reject(rows, ["too short" if s else None for s in short])


STAGE = Stage(
    "shout_captions",
    shout_captions,
    # optional: the column it reads (by the setting naming it), so that `lexsem build` refuses an
    # input without it before any work (`construct/stage.py`, `Columns`)
    columns=lambda have, column="caption", **_: Columns(reads={"column": column}),
)

"""A generator stage for build tests and the build benchmark (`ask_each`): registered at
import, so a recipe names this module in `imports`."""

from __future__ import annotations

import pyarrow as pa

from lexsem.construct.catalog import register_stage
from lexsem.construct.stage import StageContext, accepted, reject


def _prompts(rows: pa.Table, column: str = "caption") -> list[str]:
    return rows.filter(accepted(rows))[column].to_pylist()


def ask_each(rows: pa.Table, ctx: StageContext, column: str = "caption") -> pa.Table:
    """Asks the generator the `column` of each accepted row; the answer in `answer`, an empty
    answer rejected ("empty answer")."""
    answers = iter(ctx.ask(_prompts(rows, column)))
    out = [next(answers) if ok else None for ok in accepted(rows).to_pylist()]
    rows = rows.append_column("answer", pa.array(out, pa.string()))
    return reject(rows, ["empty answer" if a == "" else None for a in out])


register_stage("ask_each", ask_each, generator=True, requests=_prompts, replace=True)

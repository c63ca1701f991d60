"""Stage `fold_back_validation`: a validation study's accept / edit / reject answers folded into
a build's rows (SugarCrepe++ §2.1: experts "correct the errors in the positive sentences";
VISLA §3.3: the spatial split validated and edited by experts), so that the frozen benchmark's
data card counts them (docs/human-studies.md, "Fold-back").

A row's answers are the ``validate`` answers (practice left out, "skip" is no answer) whose
item id is the row's ``source:source_id`` (rows sharing one: ``/1``, ``/2``, ... after it,
`lexsem.construct.stage.row_ids`, as the study made from the same table numbered them). Its
decision, by majority of its validators, where an edit counts as keeping the row:

- kept, no edit → ``validation = "accepted"``;
- kept, with edits → ``validation = "edited"``: the text column takes the most frequent edit
  (the first given among equally frequent ones); the text before is kept in
  ``<column>_original``;
- rejected by the majority → ``validation = "rejected"``, ``rejected = "human_rejected"`` (a
  row already rejected keeps its first reason, `lexsem.construct.stage.reject`);
- as many to keep as to reject → ``validation = "disagreement"``,
  ``rejected = "human_disagreement"`` (SugarCrepe++'s experts
  resolved theirs "through inter-annotator discussion": a resolution lexsem cannot make);
- no answer → ``validation = null``, kept as it is, or rejected as ``not_validated`` with
  ``unvalidated = "reject"``.

Answers about rows the table does not have are an error naming the first, unless
``unknown = "ignore"``. The counts (``accepted``, ``edited``, ``human_rejected``,
``human_disagreement``, ``not validated``) go to the stage's counts in build.json, which the
frozen data card holds (`lexsem.construct.freeze`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa

from lexsem.construct.stage import PROVENANCE, REJECTED, Stage, StageContext, reject, row_ids
from lexsem.errors import DataError, LexsemError
from lexsem.results.answers_table import (
    StudyAnswer,
    answers_by_item,
    check_columns,
    majority,
    read_answers,
)

__all__ = ["DISAGREEMENT", "HUMAN_REJECTED", "NOT_VALIDATED", "STAGE", "fold_back_validation"]

HUMAN_REJECTED = "human_rejected"
DISAGREEMENT = "human_disagreement"
NOT_VALIDATED = "not_validated"
VALIDATION = "validation"
NEED = ("kind", "item_id", "annotator", "practice", "answer", "edit")


def _decide(answers: list[StudyAnswer]) -> tuple[str, str | None]:
    """(decision, edited text) of one row's answers: "accepted", "edited", "rejected" or
    "disagreement" (the tie rule: as many to keep as to reject)."""
    keep = [a for a in answers if a.answer in ("accept", "edit")]
    decision, _ = majority(
        ("keep" if a.answer in ("accept", "edit") else "rejected" for a in answers),
        on_tie="disagreement",
    )
    if decision != "keep":
        return decision, None
    edits = [a.edit for a in keep if a.answer == "edit" and a.edit is not None and a.edit.strip()]
    if not edits:
        return "accepted", None
    return "edited", majority(edits)[0]


def _answers(path: str | Path | pa.Table, where: str) -> dict[str, list[StudyAnswer]]:
    table, _, _ = read_answers(path)
    check_columns(table, where, NEED)

    def check(n: int, r: dict[str, object]) -> None:
        if r["answer"] not in ("accept", "edit", "reject"):
            raise DataError(f"row {n}: a validation answer is accept, edit or reject, not "
                            f"{r['answer']!r}", file=where)  # fmt: skip
        edit = r["edit"]
        if r["answer"] == "edit" and not (isinstance(edit, str) and edit.strip()):
            raise DataError(f"row {n}: an edit without the edited text", file=where)

    return answers_by_item(table, where, "validate", check)


def fold_back_validation(
    rows: pa.Table,
    ctx: StageContext | None,
    *,
    answers: str | pa.Table,
    column: str = "caption2",
    unvalidated: str = "keep",
    unknown: str = "error",
) -> pa.Table:
    """The rows with the validation study's decisions (see the module doc): `answers`, the
    study's answers table (a Parquet file, relative to the build folder, or a table);
    `column`, the text the validators checked (default ``caption2``, SugarCrepe++'s second
    positive; ``negative_caption`` for negatives)."""
    if unvalidated not in ("keep", "reject"):
        raise LexsemError(f"fold_back_validation: unvalidated is keep or reject, not "
                          f"{unvalidated!r}")  # fmt: skip
    if unknown not in ("error", "ignore"):
        raise LexsemError(f"fold_back_validation: unknown is error or ignore, not {unknown!r}")
    if column not in rows.column_names:
        raise LexsemError(
            f"fold_back_validation: the rows have no column {column!r} (setting `column`); they "
            f"have {', '.join(rows.column_names)}"
        )
    source: str | Path | pa.Table = answers
    if isinstance(answers, str):
        path = Path(answers)
        source = path if path.is_absolute() or ctx is None else ctx.out / path
    where = str(source) if not isinstance(source, pa.Table) else "answers"
    by_row = _answers(source, where)
    ids = row_ids(rows[PROVENANCE[0]].to_pylist(), rows[PROVENANCE[1]].to_pylist())
    stray = sorted(set(by_row) - set(ids))
    if stray and unknown == "error":
        raise DataError(
            f"answers about {len(stray)} row(s) the build does not have, e.g. {stray[0]} (item "
            'ids are source:source_id; set unknown = "ignore" to leave them out)',
            file=where,
        )
    texts = rows[column].to_pylist()
    new_text, original, status, reasons = [], [], [], []
    counts: Counter[str] = Counter()
    for key, text in zip(ids, texts, strict=True):
        given = by_row.get(key)
        if not given:
            decision, edited = None, None
        else:
            decision, edited = _decide(given)
        status.append(decision)
        new_text.append(edited if decision == "edited" else text)
        original.append(text if decision == "edited" else None)
        reason = {"rejected": HUMAN_REJECTED, "disagreement": DISAGREEMENT}.get(decision or "")
        if decision is None and unvalidated == "reject":
            reason = NOT_VALIDATED
        reasons.append(reason)
        counts[{None: "not validated", "rejected": HUMAN_REJECTED,
                "disagreement": DISAGREEMENT}.get(decision, decision or "")] += 1  # fmt: skip
    out = rows.set_column(rows.column_names.index(column), column, pa.array(new_text, pa.string()))
    for name, values in ((f"{column}_original", original), (VALIDATION, status)):
        arr = pa.array(values, pa.string())
        if name in out.column_names:
            out = out.set_column(out.column_names.index(name), name, arr)
        else:
            out = out.append_column(name, arr)
    already = out[REJECTED].to_pylist() if REJECTED in out.column_names else [None] * len(ids)
    out = reject(out, reasons)
    if ctx is not None:
        for what in ("accepted", "edited", HUMAN_REJECTED, DISAGREEMENT, "not validated"):
            ctx.count(what, counts.get(what, 0))
        ctx.count("answers about other rows", len(stray))
        overridden = sum(
            r is not None and a is not None for r, a in zip(reasons, already, strict=True)
        )
        ctx.count("already rejected", overridden)
        ctx.log(", ".join(f"{k}: {v}" for k, v in counts.items()))
    return out


STAGE = Stage("fold_back_validation", fold_back_validation)

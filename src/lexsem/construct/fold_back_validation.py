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

With `keep_first_of` (a column, e.g. ``source_id``), of the kept rows that share its value
only the first in table order stays; the others are rejected as ``another_selected`` (VISLA,
§3.3: experts "select" one of a pair's top three negative candidates, which come in rank order).

Answers about rows the table does not have are an error naming the first, unless
``unknown = "ignore"``.

The answers file (default ``human/validate/answers.parquet`` in the build folder) is the study's
export. Until it exists the stage pauses the build (`HumanStepPending`): it writes
``human/validate/README.md`` with the study's commands — ``lexsem annotate create
human/validate/study.sqlite --from-build <its input table> -k validate --column ...`` (the
table: the stage before's output, or for a recipe's first stage a copy of its rows in
``human/validate/rows.parquet``; the stage's `original`, `column`, `positive` and `image`
columns, those the rows have, as the study's roles, `column` as its role ``negative`` with
``negative = true``; `image` only there, without `positive`: a second positive or a negative
beside P1 and P2 is judged from the texts, a text-only study that needs no image), ``lexsem annotate
serve`` and ``lexsem annotate export ... --answers <the answers file>`` — and says them; the
same build command run again once the file is there goes on (the file's sha256 is part of the
stage's digest, so a new export reruns it).

The counts (``accepted``, ``edited``, ``human_rejected``, ``human_disagreement``, ``not
validated``) go to the stage's counts in build.json, which the frozen
data card holds (`lexsem.construct.freeze`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from lexsem.atomic import atomic_open
from lexsem.construct.stage import (
    PROVENANCE,
    REJECTED,
    Columns,
    HumanStepPending,
    Stage,
    StageContext,
    accepted,
    reject,
    row_ids,
)
from lexsem.construct.study_commands import annotate_commands, study_size
from lexsem.errors import DataError, LexsemError
from lexsem.results.answers_table import (
    StudyAnswer,
    answers_by_item,
    check_columns,
    majority,
    read_answers,
)

__all__ = [
    "ANSWERS",
    "DISAGREEMENT",
    "HUMAN_REJECTED",
    "NOT_SELECTED",
    "NOT_VALIDATED",
    "STAGE",
    "fold_back_validation",
]

FOLDER = "human/validate"  # in the build folder: the study, its README, its answers
ANSWERS = f"{FOLDER}/answers.parquet"  # the default answers file
HUMAN_REJECTED = "human_rejected"
NOT_SELECTED = "another_selected"
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
    answers: str | pa.Table = ANSWERS,
    column: str = "caption2",
    original: str = "caption",
    positive: str | None = None,
    negative: bool = False,
    image: str = "image",
    keep_first_of: str | None = None,
    unvalidated: str = "keep",
    unknown: str = "error",
) -> pa.Table:
    """The rows with the validation study's decisions (see the module doc): `answers`, the
    study's answers table (a Parquet file, relative to the build folder, or a table);
    `column`, the text the validators checked (default ``caption2``, SugarCrepe++'s second
    positive; ``negative_caption`` or VISLA's ``n`` for negatives); `original`, `positive` and
    `image`: what the study shows beside it (P1; P2 where the checked text is a negative; the
    image where the rows have that column and the checked text is a negative without P2, the
    others being judged from the texts alone); `negative`: the checked text is a negative
    shown without P2 (SugarCrepe's ``negative_caption``), the study's role ``negative``."""
    _check_settings(rows, column, keep_first_of, unvalidated, unknown)
    source: str | Path | pa.Table = answers
    if isinstance(answers, str):
        source = _answers_path(ctx.out if ctx is not None else None, answers)
        if not source.is_file():
            if not any(accepted(rows).to_pylist()):  # nothing to validate: no study to wait for
                if ctx is not None:
                    ctx.count("accepted", 0)
                return rows
            shown = image if negative and positive is None else None  # else text-only
            roles = {"original": original, "negative" if negative else "generated": column,
                     "positive": positive, "image": shown}  # fmt: skip
            _pause(rows, ctx, source, roles)
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
    folded = _fold(ids, rows[column].to_pylist(), by_row, unvalidated)
    out = _set_string_column(rows, column, folded.text)
    out = _set_string_column(out, f"{column}_original", folded.original)
    out = _set_string_column(out, VALIDATION, folded.status)
    already = out[REJECTED].to_pylist() if REJECTED in out.column_names else [None] * len(ids)
    out = reject(out, folded.reasons)
    if keep_first_of is not None:
        out = _keep_first(out, keep_first_of)
    if ctx is not None:
        _count(ctx, out, folded, already, len(stray), keep_first_of is not None)
    return out


def _check_settings(
    rows: pa.Table, column: str, keep_first_of: str | None, unvalidated: str, unknown: str
) -> None:
    """The stage's settings checked against their choices and the rows' columns."""
    if unvalidated not in ("keep", "reject"):
        raise LexsemError(f"fold_back_validation: unvalidated is keep or reject, not "
                          f"{unvalidated!r}")  # fmt: skip
    if unknown not in ("error", "ignore"):
        raise LexsemError(f"fold_back_validation: unknown is error or ignore, not {unknown!r}")
    for name, setting in ((column, "column"), (keep_first_of, "keep_first_of")):
        if name is not None and name not in rows.column_names:
            raise LexsemError(
                f"fold_back_validation: the rows have no column {name!r} (setting "
                f"`{setting}`); they have {', '.join(rows.column_names)}"
            )


@dataclass(frozen=True)
class _Folded:
    """Per row: its text after the decision, the text before an edit, the decision, the
    rejection reason; and the decisions counted."""

    text: list[str | None]
    original: list[str | None]
    status: list[str | None]
    reasons: list[str | None]
    counts: Counter[str]


_REASONS = {"rejected": HUMAN_REJECTED, "disagreement": DISAGREEMENT}


def _fold(
    ids: Sequence[str],
    texts: Sequence[str | None],
    by_row: Mapping[str, list[StudyAnswer]],
    unvalidated: str,
) -> _Folded:
    """Each row's decision from its answers (`_decide`; none without answers)."""
    folded = _Folded([], [], [], [], Counter())
    for key, text in zip(ids, texts, strict=True):
        given = by_row.get(key)
        decision, edited = _decide(given) if given else (None, None)
        folded.status.append(decision)
        folded.text.append(edited if decision == "edited" else text)
        folded.original.append(text if decision == "edited" else None)
        reason = _REASONS.get(decision or "")
        if decision is None and unvalidated == "reject":
            reason = NOT_VALIDATED
        folded.reasons.append(reason)
        folded.counts[{None: "not validated", **_REASONS}.get(decision, decision or "")] += 1
    return folded


def _set_string_column(table: pa.Table, name: str, values: list[str | None]) -> pa.Table:
    """`table` with the string column `name` replaced, or appended where it has none."""
    arr = pa.array(values, pa.string())
    if name in table.column_names:
        return table.set_column(table.column_names.index(name), name, arr)
    return table.append_column(name, arr)


def _count(
    ctx: StageContext,
    out: pa.Table,
    folded: _Folded,
    already: list[Any],
    stray: int,
    kept_first: bool,
) -> None:
    """The stage's counts in build.json and its log line."""
    for what in ("accepted", "edited", HUMAN_REJECTED, DISAGREEMENT, "not validated"):
        ctx.count(what, folded.counts.get(what, 0))
    ctx.count("answers about other rows", stray)
    overridden = sum(
        r is not None and a is not None for r, a in zip(folded.reasons, already, strict=True)
    )
    ctx.count("already rejected", overridden)
    if kept_first:
        ctx.count(NOT_SELECTED, sum(r == NOT_SELECTED for r in out[REJECTED].to_pylist()))
    ctx.log(", ".join(f"{k}: {v}" for k, v in folded.counts.items()))


def _keep_first(rows: pa.Table, column: str) -> pa.Table:
    """Of the accepted rows sharing a value of `column`, all but the first rejected."""
    seen: set[Any] = set()
    reasons: list[str | None] = []
    for ok, key in zip(accepted(rows).to_pylist(), rows[column].to_pylist(), strict=True):
        reasons.append(NOT_SELECTED if ok and key in seen else None)
        if ok:
            seen.add(key)
    return reject(rows, reasons)


def _answers_path(out: Path | None, answers: str) -> Path:
    path = Path(answers).expanduser()
    return path if path.is_absolute() or out is None else out / path


def _answer_files(out: Path, **settings: Any) -> list[Path]:
    """The file the stage reads (its sha256 is part of the stage's digest)."""
    answers = settings.get("answers", ANSWERS)
    return [_answers_path(out, answers)] if isinstance(answers, str) else []


def _present(roles: dict[str, str | None], columns: Sequence[str]) -> dict[str, str]:
    """The study's roles whose columns the rows have (the image and P2 are optional)."""
    return {role: name for role, name in roles.items() if name is not None and name in columns}


def study_commands(
    ctx: StageContext | None, table: Path, answers: Path, roles: dict[str, str]
) -> list[str]:
    """The `lexsem annotate` commands of the validation study of `table` (the stage's input),
    its answers exported to `answers` (none outside a build)."""
    if ctx is None:
        return []
    given = {
        role: name
        for role, name in roles.items()
        if role != "image" or name != "image"  # the study's own default
    }
    return annotate_commands(
        ctx.out / FOLDER / "study.sqlite", table, "validate", given,
        f"{ctx.out.name}: validation", answers,
    )  # fmt: skip


def _study_table(rows: pa.Table, ctx: StageContext) -> Path:
    """The table the study is made from: the stage's input (the stage before's output), or for
    a recipe's first stage a copy of its rows in ``human/validate/rows.parquet``."""
    if ctx.input:
        return ctx.out / ctx.input
    import pyarrow.parquet as pq

    from lexsem.atomic import atomic_path

    path = ctx.out / FOLDER / "rows.parquet"
    with atomic_path(path) as tmp:
        pq.write_table(rows, tmp)
    return path


def _pause(
    rows: pa.Table, ctx: StageContext | None, answers: Path, roles: dict[str, str | None]
) -> None:
    """No answers yet: the README of the study written in ``human/validate``, then the build
    paused with its commands."""
    n = sum(accepted(rows).to_pylist())
    shown = _present(roles, rows.column_names)
    readme = commands = None
    if ctx is not None:
        readme = ctx.out / FOLDER / "README.md"
        readme.parent.mkdir(parents=True, exist_ok=True)
        commands = study_commands(ctx, _study_table(rows, ctx), answers, shown)
        with atomic_open(readme, encoding="utf-8") as fh:
            fh.write(_readme(n, shown, commands, answers, ctx.sized))
    raise HumanStepPending(
        f"fold_back_validation: waiting for people: no answers file {answers}. {_rows(n)} to "
        f"validate (accept, edit or reject {_checked(roles)!r}) in a `validate` study; "
        f"{_size(n, ctx.sized if ctx is not None else ())}"
        + (f"; how: {readme}" if readme is not None else ""),
        commands=commands or [],
        answers=answers,
    )


def _checked(roles: Mapping[str, str | None]) -> str | None:
    """The column of the text the study checks (its role ``generated`` or ``negative``)."""
    return roles.get("generated") or roles.get("negative")


def _size(n: int, sized: Sequence[str] = ()) -> str:
    return study_size(n, "row", 'the others stay unvalidated: kept as they are, or rejected '
                      'with the stage\'s unvalidated = "reject"', sized)  # fmt: skip


def _rows(n: int) -> str:
    return "1 row" if n == 1 else f"{n} rows"


def _readme(
    n: int, roles: dict[str, str], commands: list[str], answers: Path, sized: Sequence[str] = ()
) -> str:
    shown = ", ".join(f"{role}: `{name}`" for role, name in roles.items())
    images = (
        " The images are read as an evaluation reads them: VSR's and COCO's from the COCO "
        "folders (`--coco-val2017 DIR` and `LEXSEM_COCO_TRAIN2017=DIR`), others from "
        "`--image-root DIR` or as paths relative to the build folder."
        if "image" in roles
        else ""
    )
    return (
        "# Human step: validation (SugarCrepe++, §2.1; VISLA, §3.3)\n\n"
        f"{_rows(n)} to validate: people accept, edit or reject the text in "
        f"`{_checked(roles)}` (the study's columns: {shown}). Make the study, serve it, "
        "export its answers:\n\n"
        + "".join(f"    {c}\n" for c in commands)
        + "\nAdd `--annotators N --overlap K` to the first command for N personal links and K "
        "validators per item; their decisions are combined by majority, a tie rejects the row "
        f"as `human_disagreement`. The study size: {_size(n, sized)}.{images}\n\nThe build reads "
        f"`{answers}`; once it is there, run the same `lexsem build` command again.\n"
    )


def _columns(have: frozenset[str], *, column: str = "caption2", **_: Any) -> Columns:
    return Columns({"column": column}, frozenset({f"{column}_original", VALIDATION}))


STAGE = Stage("fold_back_validation", fold_back_validation, files=_answer_files,
              columns=_columns)  # fmt: skip

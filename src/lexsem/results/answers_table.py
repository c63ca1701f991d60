"""A human study's answers table: the one interface between a study and what reads its answers
(docs/human-studies.md, "The answers table"). The study file's export
(`lexsem.annotate.answers`) and Label Studio's exports (`lexsem.annotate.labelstudio_import`)
write it; the agreement statistics, the human run and the build's fold-back stages
(`lexsem.construct.human`, `lexsem.construct.fold_back_validation`) read it, all through this
module: its columns and types (`ANSWERS_SCHEMA`), its reader (`read_answers`: the table, its
name and sha256), the check of the columns a reader needs (`check_columns`), each item's
answers of one kind (`answers_by_item`) and the majority of several annotators (`majority`).

Columns: ``study``, ``kind``, ``item_id`` (the benchmark item id or a build row's
``source:source_id``; BiVLC queries add ``#image0`` etc., `lexsem.annotate.kinds.query_id`),
``subset``, ``benchmark`` (the selector), ``annotator`` (opaque id), ``practice``, ``gold``,
``options`` (the option ids in the order shown), ``answer`` (an option id, "none", "both",
"accept" / "edit" / "reject", or "skip"), ``correct`` (null where the item has no right
answer), ``edit`` (the edited text of a validation item, else null), ``seconds``,
``answered_at`` (ISO time, UTC), ``seed`` (the annotator's randomisation seed).
"""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

import pyarrow as pa

from lexsem.errors import DataError

__all__ = [
    "ANSWERS_SCHEMA",
    "FIRST",
    "SKIP",
    "StudyAnswer",
    "answers_by_item",
    "check_columns",
    "majority",
    "read_answers",
]

ANSWERS_SCHEMA = pa.schema(
    [
        ("study", pa.string()),
        ("kind", pa.string()),
        ("item_id", pa.string()),
        ("subset", pa.string()),
        ("benchmark", pa.string()),
        ("annotator", pa.string()),
        ("practice", pa.bool_()),
        ("gold", pa.bool_()),
        ("options", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("correct", pa.bool_()),
        ("edit", pa.string()),
        ("seconds", pa.float64()),
        ("answered_at", pa.string()),
        ("seed", pa.int64()),
    ]
)
SKIP = "skip"  # an annotator's "skip": no answer

T = TypeVar("T")


def read_answers(source: str | Path | pa.Table) -> tuple[pa.Table, str, str]:
    """(table, name, sha256) of an answers table or of its Parquet file; a file that is not one
    is an error naming it."""
    if isinstance(source, pa.Table):
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, source.schema) as w:
            w.write_table(source)
        return source, "answers", hashlib.sha256(sink.getvalue()).hexdigest()
    import pyarrow.parquet as pq

    path = Path(source)
    try:
        data = path.read_bytes()
        table = pq.read_table(pa.BufferReader(data))
    except FileNotFoundError:
        raise DataError("no such answers file", file=path) from None
    except IsADirectoryError:
        raise DataError("is a folder, not an answers file (Parquet)", file=path) from None
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"not a Parquet answers table ({exc})", file=path) from None
    return table, path.name, hashlib.sha256(data).hexdigest()


def _same_kind(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type `have` holds what `ANSWERS_SCHEMA` says (`want`): the same
    kind of value (text, boolean, number, list of text), or nothing (all null)."""
    if pa.types.is_null(have) or have == want:
        return True
    if pa.types.is_string(want):
        return pa.types.is_string(have) or pa.types.is_large_string(have)
    if pa.types.is_floating(want):
        return pa.types.is_floating(have) or pa.types.is_integer(have)
    if pa.types.is_integer(want):
        return pa.types.is_integer(have)
    if pa.types.is_list(want):
        return (pa.types.is_list(have) or pa.types.is_large_list(have)) and _same_kind(
            have.value_type, want.value_type
        )
    return False


def check_columns(table: pa.Table, where: str, need: Sequence[str]) -> None:
    """A table without one of the columns `need`, or with one of another type than
    `ANSWERS_SCHEMA` gives it, is an error naming the file."""
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise DataError(
            f"not a study's answers table: no column {missing[0]!r} (it has "
            f"{', '.join(table.column_names) or 'none'})",
            file=where,
        )
    for name in need:
        if name in ANSWERS_SCHEMA.names:
            have, want = table.schema.field(name).type, ANSWERS_SCHEMA.field(name).type
            if not _same_kind(have, want):
                raise DataError(
                    f"not a study's answers table: column {name!r} holds {have}, not {want}",
                    file=where,
                )


@dataclass(frozen=True)
class StudyAnswer:
    """One annotator's answer to one item: its row in the table (1-based), the annotator, the
    answer (an option id or a fixed choice) and the edited text (validation; else None)."""

    row: int
    annotator: str
    answer: str
    edit: str | None = None


def answers_by_item(
    table: pa.Table,
    where: str,
    kind: str,
    check: Callable[[int, dict[str, object]], None] | None = None,
) -> dict[str, list[StudyAnswer]]:
    """Item id -> the answers of `kind` in the answers table, in table order: practice answers,
    "skip" and empty answers left out; `check(row, record)` may refuse a row (a `DataError`).
    One annotator answering one item twice is an error naming the file, row and item."""
    need = ["kind", "item_id", "annotator", "practice", "answer"]
    if "edit" in table.column_names:
        need.append("edit")
    check_columns(table, where, need)
    out: dict[str, list[StudyAnswer]] = {}
    seen: dict[tuple[str, str], int] = {}
    for n, r in enumerate(table.select(need).to_pylist(), 1):
        if r["kind"] != kind or r["practice"] or r["answer"] in (None, SKIP):
            continue
        if check is not None:
            check(n, r)
        item, who = str(r["item_id"]), str(r["annotator"])
        if (item, who) in seen:
            raise DataError(
                f"{where}, row {n}: item {item!r}: annotator {who} answered it again (first on "
                f"row {seen[(item, who)]})"
            )
        seen[(item, who)] = n
        edit = r.get("edit")
        out.setdefault(item, []).append(
            StudyAnswer(n, who, str(r["answer"]), edit if isinstance(edit, str) else None)
        )
    return out


class _First:
    def __repr__(self) -> str:
        return "FIRST"


FIRST: Final = _First()  # a tie goes to the first given of the equally frequent choices


def majority(choices: Iterable[T], on_tie: T | _First = FIRST) -> tuple[T, bool]:
    """(the choice most annotators made, whether another was made as often). On a tie the
    caller's tie rule decides: `on_tie` (what a tie counts as), or by default (`FIRST`) the
    first given of the equally frequent choices."""
    counts = Counter(choices)
    if not counts:
        raise ValueError("a majority of no choices")
    best = max(counts.values())
    top = [c for c in counts if counts[c] == best]
    if len(top) == 1:
        return top[0], False
    return (top[0] if isinstance(on_tie, _First) else on_tie), True

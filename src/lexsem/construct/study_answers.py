"""A human study's answers table (`lexsem annotate export STUDY --answers FILE.parquet`,
docs/human-studies.md, "The answers table") read as the answers to BiVLC's human steps (§3
steps 3 and 4) for the stage `fold_back_answers` (`lexsem.construct.human`), and several
annotators' answers to one task combined by majority.

The study is made from the build's own stage output (``lexsem annotate create --from-build
DIR/stages/NN-ask_....parquet``), so an answer's ``item_id`` is its row's ``source:source_id``
and its option ids are the study's: ``image0``, ``image1``, ... (the K images in the row's
list order) or ``none`` for ``best_of_k``; ``image0`` (the original image), ``image1`` (the
generated one) or ``both`` for ``ambiguity``. Practice answers and ``skip`` are no answer.

Majority: the choice most annotators made. A tie between the most frequent choices is decided
against keeping the row (`TIE_RULE`): a best-image task whose answers tie counts as ``None``
(no good image), an ambiguity task whose keep / ambiguous decisions tie as ambiguous; BiVLC
keeps an instance only where people found it unambiguous (§3 step 4), and one annotator
choosing image A and another image B did not agree on an image. Ties are counted in the
stage's counts (``ties``).

The table is read and its columns checked by `lexsem.construct.answers_table`, as every reader of
a study's answers does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lexsem.construct.answers_table import check_columns, read_answers
from lexsem.errors import DataError

__all__ = ["STUDY_KIND", "TIE_RULE", "StudyAnswer", "majority", "read_study_answers"]

STUDY_KIND = {"best_image": "best_of_k", "ambiguity": "ambiguity"}  # task -> study kind
NEED = ("kind", "item_id", "annotator", "practice", "answer")
TIE_RULE = "a tie counts against keeping the row: None (best image) or ambiguous (ambiguity)"


@dataclass(frozen=True)
class StudyAnswer:
    """One annotator's answer: its row in the file (1-based), the annotator, the option id."""

    row: int
    annotator: str
    answer: str


def read_study_answers(path: Path, task: str) -> dict[str, list[StudyAnswer]]:
    """Item id -> the answers of `task`'s study kind in the answers table at `path`; an error
    names the file (and the row and item) when it is not such a table, holds no answer of that
    kind, or has one annotator answer one item twice."""
    kind = STUDY_KIND[task]
    table, _, _ = read_answers(path)
    check_columns(table, str(path), NEED)
    out: dict[str, list[StudyAnswer]] = {}
    seen: dict[tuple[str, str], int] = {}
    kinds: Counter[str] = Counter()
    for n, r in enumerate(table.select(list(NEED)).to_pylist(), 1):
        kinds[str(r["kind"])] += 1
        if r["kind"] != kind or r["practice"] or r["answer"] in (None, "skip"):
            continue
        item, who = str(r["item_id"]), str(r["annotator"])
        if (item, who) in seen:
            raise DataError(
                f"{path}, row {n}: item {item!r}: annotator {who} answered it again (first on "
                f"row {seen[(item, who)]})"
            )
        seen[(item, who)] = n
        out.setdefault(item, []).append(StudyAnswer(n, who, str(r["answer"])))
    if not kinds.get(kind):
        found = ", ".join(sorted(kinds)) or "none"
        raise DataError(
            f"{path}: no {kind} answers (the {task} task's study kind); the table has {found}"
        )
    return out


def majority(choices: Sequence[str]) -> tuple[str, bool]:
    """(the most frequent of `choices`, whether another choice was as frequent); the first
    given among equally frequent ones is returned."""
    counts = Counter(choices)
    best = max(counts.values())
    top = [c for c in counts if counts[c] == best]
    return top[0], len(top) > 1

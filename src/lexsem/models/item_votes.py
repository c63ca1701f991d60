"""People's answers as a by-item model: the votes of a human study's annotators on each question
("query", `lexsem.tasks.voted`) of the items they answered, which the Evaluator scores by the
people's reading of the benchmark's own tasks (`voted_task`) as it scores any model, writing a
normal run folder. `lexsem.annotate.human_run` makes one from a study's answers table; nothing
here knows a study.

A `Vote` is one query of one item: the benchmark (its name, `LoadedBenchmark.spec.name`), the
task, the query, the item (subset, id), how many annotators answered it and how many of them
right, and where those answers are (e.g. `row 3`), for errors and the run's coverage.

The model answers by item (`by_item`: no image, no request store). Before the run's work,
`votes_for` checks the votes against the run's items: a vote about an item the benchmark lacks
is left out and named in the run's coverage (`coverage`, the run's `RunRecord.recorded`), or
with `strict_items` an error naming where its answers are; votes none of which is about an item
of the run are an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lexsem.errors import DataError
from lexsem.tasks.voted import RIGHT, WRONG

__all__ = ["ItemVotes", "Vote"]


@dataclass(frozen=True)
class Vote:
    """The answers of one query of one item (see the module doc)."""

    benchmark: str
    task: str
    query: str
    subset: str
    item_id: str
    answers: int
    right: int
    where: tuple[str, ...]  # where each answer is (`row 3`)


class ItemVotes:
    """People's votes as a model (see the module doc; the protocol
    `lexsem.models.protocols.VotesModel`). `name`: the run's spec (e.g.
    `human:STUDY`); `source`: where the votes come from, named by errors; `file`: its name in
    the run's coverage."""

    by_item = True  # no images, no request store
    concurrency = 1

    def __init__(
        self,
        name: str,
        votes: Sequence[Vote],
        fingerprint: dict[str, Any],
        *,
        source: str,
        file: str,
        strict_items: bool = False,
    ) -> None:
        self.name = name
        self.votes = list(votes)
        self._fingerprint = dict(fingerprint)
        self.source, self.file, self.strict_items = source, file, strict_items
        self.unknown: list[tuple[str, str, str]] = []  # (where, subset, item id)
        self._known: set[tuple[str, str, str]] = set()  # (benchmark, subset, item id)

    @property
    def fingerprint(self) -> dict[str, Any]:
        return dict(self._fingerprint)

    def tasks_for(self, benchmark: Any) -> list[str]:
        """The tasks of the loaded `benchmark` with a vote about one of its items."""
        name = benchmark.spec.name
        items = {(it.subset, str(it.id)) for it in benchmark.items}
        mine = (v for v in self.votes if v.benchmark == name and (v.subset, v.item_id) in items)
        return list(dict.fromkeys(v.task for v in mine))

    def votes_for(self, works: Sequence[Any]) -> dict[tuple[str, str, str, str, str], float]:
        """Check the votes against the items of `works` (see the module doc); the value of
        each `votes` column of each item voted on."""
        items = {(w.benchmark, it.subset, str(it.id)) for w in works for it in w.items}
        out: dict[tuple[str, str, str, str, str], float] = {}
        self.unknown, self._known = [], set()
        for v in self.votes:
            key = (v.benchmark, v.subset, v.item_id)
            if key not in items:
                if self.strict_items:
                    raise DataError(f"{v.where[0]}: an answer about item {v.subset}/{v.item_id}, "
                                    f"which benchmark {v.benchmark} does not have",
                                    file=self.source)  # fmt: skip
                self.unknown += [(w, v.subset, v.item_id) for w in v.where]
                continue
            self._known.add(key)
            base = (v.benchmark, v.task)
            out[(*base, RIGHT + v.query, v.subset, v.item_id)] = float(v.right)
            out[(*base, WRONG + v.query, v.subset, v.item_id)] = float(v.answers - v.right)
        if not out:
            first = f" ({self.unknown[0][0]}: item {self.unknown[0][1]}/{self.unknown[0][2]})"
            raise DataError("no answer is about an item of the benchmark selection"
                            + (first if self.unknown else ""), file=self.source)  # fmt: skip
        self.unknown.sort(key=lambda u: _row_order(u[0]))
        return out

    def coverage(self, benchmarks: Sequence[Any]) -> dict[str, Any]:
        """What the votes cover of the loaded `benchmarks` (after `votes_for`), in the fields
        of `lexsem.results.schema.RecordedCoverage`."""
        answered: dict[str, int] = {}
        total: dict[str, int] = {}
        for bench in benchmarks:
            for it in bench.items:
                seen = (bench.spec.name, it.subset, str(it.id)) in self._known
                total[it.subset] = total.get(it.subset, 0) + 1
                answered[it.subset] = answered.get(it.subset, 0) + seen
        return {
            "file": self.file,
            "answers": sum(v.answers for v in self.votes),
            "items_answered": answered,
            "items_total": total,
            "unknown": [{"where": w, "subset": s, "item_id": i} for w, s, i in self.unknown],
        }


def _row_order(where: str) -> tuple[int, str]:
    """`row 12` after `row 3`."""
    head, _, tail = where.rpartition(" ")
    return (int(tail), head) if tail.isdigit() else (0, where)

"""Answers and scores made elsewhere as the model of a run (`Evaluator.run_recorded`): answers
collected by `lexsem ask` or found in a file (a benchmark's published answers), VQAScores from
an API's log-probabilities, become a run folder like a local model's, usable by `compare` and
`report`.

- `RecordedAnswers`: one prompt's free-form answers by (subset, item id, ordering), read by the
  task `choice_<prompt>` exactly as a local model's answers are;
- `RecordedScores`: one score per (subset, item id, image, caption), the image-text scores of
  the benchmark's image tasks whose every column is an image-text score (`itt` of triplets,
  `pair`, the ARO tasks, `bivlc` and `winoground` with both images).

Each has a name, a spec (what made the records: the file, the API model's spec) and a
fingerprint (the file's sha256, or the API model's fingerprint with the
prompt or question), so two sources never share a run id. A record about an item, ordering or
caption the benchmark selection lacks is an error naming it; an item without every record it
needs is left out of the run, reported in the coverage.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from lexsem.engine.scores import Scores
from lexsem.errors import DataError
from lexsem.tasks.base import Task
from lexsem.tasks.choice import Answer

__all__ = ["RecordedAnswers", "RecordedScores"]


class RecordedAnswers:
    """One prompt's recorded answers (see the module doc); `where` names their source in
    errors."""

    def __init__(
        self,
        answers: Sequence[Answer],
        prompt: str,
        name: str,
        fingerprint: dict[str, Any],
        where: str,
        spec: str | None = None,
    ) -> None:
        self.prompt, self.name, self.spec, self.where = prompt, name, spec or name, where
        self.fingerprint = {**fingerprint, "prompt": prompt}
        self._by: dict[tuple[str, str, str], str | None] = {}
        for a in answers:
            if a.prompt != prompt:
                raise DataError(
                    f"{where}: an answer to prompt {a.prompt!r}; this run is of {prompt!r}"
                )
            key = (a.subset, str(a.item_id), a.ordering)
            if key in self._by:
                raise DataError(f"{where}: two answers for {a.subset}/{a.item_id}, {a.ordering}")
            self._by[key] = a.text

    def tasks(self, bench: Any) -> list[Task]:
        from lexsem.tasks.catalog import get_task

        task = get_task(f"choice_{self.prompt}")
        if bench.item_kind != task.item_kind:
            raise DataError(
                f"prompt {self.prompt!r} is for {task.item_kind} items; benchmark "
                f"{bench.name!r} has {bench.item_kind} items"
            )
        return [task]

    def check(self, works: Sequence[Any]) -> None:
        """Every answer names an item of `works` and an ordering of its task."""
        known = {
            (it.subset, str(it.id), c.name.removeprefix("answer_"))
            for w in works for it in w.items for t in w.tasks for c in t.columns
        }  # fmt: skip
        for subset, item_id, ordering in self._by:
            if (subset, item_id, ordering) not in known:
                raise DataError(
                    f"{self.where}: an answer about {subset}/{item_id} in ordering {ordering!r}, "
                    "which the benchmark selection does not have"
                )

    def scores(self, works: Sequence[Any]) -> Scores:
        """The engine's answer table (decode profile, image, prompt) -> answer of `works`."""
        out: dict[tuple[str, str, str], str | None] = {}
        for w in works:
            for task in w.tasks:
                for col in task.columns:
                    ordering = col.name.removeprefix("answer_")
                    for it in w.items:
                        out[(w.decode, *col.get(it))] = self._by.get(
                            (it.subset, str(it.id), ordering)
                        )
        return Scores(answers=out)


class RecordedScores:
    """Image-text scores by (subset, item id, image reference, caption) (see the module
    doc)."""

    def __init__(
        self,
        scores: dict[tuple[str, str, str, str], float],
        name: str,
        fingerprint: dict[str, Any],
        where: str,
        spec: str | None = None,
    ) -> None:
        self.name, self.spec, self.fingerprint, self.where = name, spec or name, fingerprint, where
        self._by = dict(scores)

    def tasks(self, bench: Any) -> list[Task]:
        from lexsem.tasks.catalog import get_task

        tasks = [get_task(t) for t in bench.image_tasks]
        tasks = [t for t in tasks if all(c.kind == "image_text" for c in t.columns)]
        if not tasks:
            raise DataError(f"{self.where}: benchmark {bench.name!r} has no image-text task")
        return tasks

    def _pairs(self, works: Sequence[Any]) -> Iterator[tuple[str, Any, str, str]]:
        """(decode profile, item, image reference, caption) of every image-text column."""
        for w in works:
            for task in w.tasks:
                for col in task.columns:
                    for it in w.items:
                        yield (w.decode, it, *col.get(it))

    def check(self, works: Sequence[Any]) -> None:
        known = {(it.subset, str(it.id), ref, t) for _, it, ref, t in self._pairs(works)}
        for subset, item_id, ref, text in self._by:
            if (subset, item_id, ref, text) not in known:
                raise DataError(
                    f"{self.where}: a score of {subset}/{item_id} for ({ref!r}, {text!r}), "
                    "which the benchmark selection does not have"
                )

    def scores(self, works: Sequence[Any]) -> Scores:
        index: dict[tuple[str, str, str], int] = {}
        values: list[float] = []
        for profile, it, ref, text in self._pairs(works):
            if (profile, ref, text) not in index:
                index[(profile, ref, text)] = len(values)
                values.append(self._by.get((it.subset, str(it.id), ref, text), np.nan))
        return Scores(pair_values=np.array(values, dtype=np.float64), pair_index=index)

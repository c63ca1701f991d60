"""Recorded answers as the model of a run (`Evaluator.run_recorded`): answers collected
elsewhere (`lexsem ask -o`, a benchmark's published answers) become a run folder like a local
model's, usable by `compare` and `report`.

`RecordedAnswers` holds one prompt's answers by (subset, item id, ordering); its fingerprint is
the file's sha256 and the prompt, so two files never share a run id. An answer about an item
or ordering the benchmark selection lacks is an error naming it; an item with no answer in
some ordering is left out of the run (its image column is empty), reported in the coverage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lexsem.errors import DataError
from lexsem.tasks.choice import Answer

__all__ = ["RecordedAnswers"]


class RecordedAnswers:
    """One prompt's recorded answers (see the module doc)."""

    def __init__(self, path: str | Path, answers: Sequence[Answer], prompt: str, name: str) -> None:
        self.path = Path(path)
        self.prompt = prompt
        self.name = name
        self.sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        self._by: dict[tuple[str, str, str], str | None] = {}
        for a in answers:
            if a.prompt != prompt:
                raise DataError(
                    f"{self.path}: an answer to prompt {a.prompt!r}; this run is of {prompt!r}"
                )
            key = (a.subset, str(a.item_id), a.ordering)
            if key in self._by:
                raise DataError(
                    f"{self.path}: two answers for {a.subset}/{a.item_id}, {a.ordering}"
                )
            self._by[key] = a.text

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "recorded", "file": self.path.name, "sha256": self.sha256,
                "prompt": self.prompt}  # fmt: skip

    def check(self, works: Sequence[Any]) -> None:
        """Every answer names an item of `works` and an ordering of its task."""
        known = {
            (it.subset, str(it.id), c.name.removeprefix("answer_"))
            for w in works
            for it in w.items
            for t in w.tasks
            for c in t.columns
        }
        for subset, item_id, ordering in self._by:
            if (subset, item_id, ordering) not in known:
                raise DataError(
                    f"{self.path}: an answer about {subset}/{item_id} in ordering {ordering!r}, "
                    "which the benchmark selection does not have"
                )

    def answers(self, works: Sequence[Any]) -> dict[tuple[str, str, str], str | None]:
        """The engine's answer table (decode profile, image, prompt) -> answer of `works`."""
        out: dict[tuple[str, str, str], str | None] = {}
        for w in works:
            for task in w.tasks:
                for col in task.columns:
                    ordering = col.name.removeprefix("answer_")
                    for it in w.items:
                        text = self._by.get((it.subset, str(it.id), ordering))
                        out[(w.decode, *col.get(it))] = text
        return out

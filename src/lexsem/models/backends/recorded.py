"""`recorded:` backend: answers recorded in a file (`lexsem.models.answers_file`: JSON Lines or
a JSON list of `{"id", "subset", "ordering", "answer", "prompt"}`) as a chat model, so that a
model run elsewhere (an API, a benchmark's published answers) is scored by the same
multiple-choice tasks as lexsem's own runs and gives a run like any other
(`lexsem score-answers FILE`).

Spec: `recorded:FILE?prompt=scpp1&strict_items=true` (`prompt`: of the records that name
none; `strict_items`: an answer about an item the benchmark selection lacks is an error). It
answers a
request by what the request is about (`ChatRequest.about`: subset, item id, the task's prompt
and the column's ordering), never by sending anything, and is shown no image (`by_item`); it
has no request store (nothing to save). An item without a recorded answer (or with `null`) is
left out of the run and reported in the coverage. Before answering, `expect` checks the file
against the run's requests: an answer about an item the benchmark selection lacks is left out
and named in the run's coverage (`coverage`, the run's `RunRecord.recorded`), or with
`strict_items` an error naming the file and the record (a file with no answer about an item of
the selection is an error, naming its first record); an answer in an ordering its item kind
lacks is an error; a record without a subset takes the selection's one subset.

Its fingerprint: the file's name and sha256, its prompts and the k-shot settings the records
give (`shots`, `shot_seed`, as `lexsem ask -o` writes them), so two files never share a run id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from lexsem.errors import DataError, ModelError
from lexsem.models.answers_file import read_answer_records, recorded_settings
from lexsem.models.chat import ChatRequest
from lexsem.models.options import Option, parse_bool
from lexsem.models.spec import ModelSpec, parse_model_spec
from lexsem.tasks.choice import ORDERINGS, PROMPTS, Answer

__all__ = ["RecordedChat"]

_KIND = {3: "a triplet's", 2: "a pair's"}


def _prompt(text: str) -> str:
    if text not in PROMPTS:
        from lexsem.registry import did_you_mean

        raise ValueError(f"unknown prompt {text!r}{did_you_mean(text, list(PROMPTS))}")
    return text


Key = tuple[str, str, str, str]  # (subset, item id, prompt, ordering)


class RecordedChat:
    """Recorded answers as a `ChatModel` (see the module doc)."""

    backend: ClassVar[str] = "recorded"
    description = "answers recorded in a file (JSONL / JSON list): chat, by item"
    options: ClassVar[Mapping[str, Option]] = {
        "prompt": Option(_prompt, None),
        "strict_items": Option(parse_bool, False),
    }
    by_item = True  # answers from `ChatRequest.about`: no images, no store
    concurrency = 1

    def __init__(self, spec: ModelSpec | str, *, name: str | None = None, **_: Any) -> None:
        parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
        if parsed.backend != self.backend:
            raise ModelError(f"{spec!r} is not a recorded: spec (recorded:FILE?prompt=...)")
        self.path = Path(parsed.name)
        self.name = (name if name is not None else str(spec)).strip()
        self.records = read_answer_records(
            self.path, prompt=parsed.get("prompt"), subset=None, require_subset=False
        )
        self.prompts = sorted({a.prompt for _, a in self.records})
        self.strict_items = bool(parsed.get("strict_items"))
        self._by: dict[Key, str | None] = {}
        self.unknown: list[tuple[str, str, str]] = []  # (where, subset, item id)
        try:
            sha = hashlib.sha256(self.path.read_bytes()).hexdigest()
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read the answers file ({exc})") from None
        prompt: Any = self.prompts[0] if len(self.prompts) == 1 else self.prompts
        self._fingerprint = {"backend": self.backend, "file": self.path.name, "sha256": sha,
                             **recorded_settings(self.path), "prompt": prompt}  # fmt: skip

    @property
    def fingerprint(self) -> dict[str, Any]:
        return dict(self._fingerprint)

    @property
    def tasks(self) -> list[str]:
        """The multiple-choice tasks the file answers (`choice_<prompt>`)."""
        return [f"choice_{p}" for p in self.prompts]

    def request_body(self, request: ChatRequest, image_part: Any = None) -> dict[str, Any]:
        return {"about": dict(request.about)}

    def expect(self, requests: Sequence[ChatRequest]) -> None:
        """Check the file against the run's requests (see the module doc) and index it."""
        asked: dict[tuple[str, str], dict[str, set[str]]] = {}
        for r in requests:
            a = r.about
            prompt = a["task"].removeprefix("choice_")
            asked.setdefault((a["subset"], a["item"]), {}).setdefault(prompt, set()).add(
                a["column"].removeprefix("answer_")
            )
        subsets = sorted({s for s, _ in asked})
        self._by, self.unknown = {}, []
        for where, a in self.records:
            sub = a.subset or self._one_subset(subsets, where)
            known = asked.get((sub, a.item_id))
            if known is None:
                if self.strict_items:
                    raise DataError(
                        f"{self.path}, {where}: an answer about item {sub}/{a.item_id}, which "
                        "the benchmark selection does not have (strict items)"
                    )
                self.unknown.append((where, sub, a.item_id))
                continue
            orderings = known.get(a.prompt, set())
            if a.ordering not in orderings:
                every = set().union(*known.values())
                n = next((k for k, names in ORDERINGS.items() if every <= set(names)), 0)
                raise DataError(
                    f"{self.path}, {where}: item {sub}/{a.item_id}: ordering {a.ordering!r} is "
                    f"not one of {_KIND.get(n, 'its')} asked with prompt {a.prompt!r} "
                    f"({', '.join(sorted(orderings)) or 'none'})"
                )
            key = (sub, a.item_id, a.prompt, a.ordering)
            if key in self._by:
                raise DataError(
                    f"{self.path}, {where}: two answers for {sub}/{a.item_id}, prompt "
                    f"{a.prompt!r}, {a.ordering}"
                )
            self._by[key] = a.text
        if self.unknown and not self._by:
            where, sub, item = self.unknown[0]
            raise DataError(
                f"{self.path}, {where}: an answer about item {sub}/{item}, which the benchmark "
                "selection does not have; no answer of the file is about an item it has"
            )

    def _one_subset(self, subsets: list[str], where: str) -> str:
        if len(subsets) != 1:
            raise DataError(
                f"{self.path}, {where}: no subset: give it per record, or select one subset "
                "(-b NAME/SUBSET)"
            )
        return subsets[0]

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """The recorded answer to the request `body` is about (None: none recorded)."""
        a = body["about"]
        key = (a["subset"], a["item"], a["task"].removeprefix("choice_"),
               a["column"].removeprefix("answer_"))  # fmt: skip
        return self._by.get(key), {"recorded": self.path.name}

    def coverage(self, benchmarks: Sequence[Any]) -> dict[str, Any]:
        """What the file covers of the loaded `benchmarks` (after `expect`), in the fields of
        `lexsem.results.schema.RecordedCoverage`: per subset the items with an answer and the
        items loaded, and the answers about unknown items."""
        answered = {(sub, item) for (sub, item, _, _), text in self._by.items() if text is not None}
        items: dict[str, int] = {}
        total: dict[str, int] = {}
        for bench in benchmarks:
            for it in bench.items:
                total[it.subset] = total.get(it.subset, 0) + 1
                items[it.subset] = items.get(it.subset, 0) + ((it.subset, str(it.id)) in answered)
        return {
            "file": self.path.name,
            "answers": len(self.records),
            "items_answered": items,
            "items_total": total,
            "unknown": [{"where": w, "subset": s, "item_id": i} for w, s, i in self.unknown],
        }

    def answers(self) -> list[Answer]:
        """The answers of the file, as read."""
        return [a for _, a in self.records]

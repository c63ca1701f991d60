"""SugarCrepe's published GPT-4V answers (SugarCrepe, GPT-4V evaluation: its repository's
`gpt-4v-results` folder) converted into lexsem's recorded-answers format
(`lexsem.models.answers_file`), to be scored by `lexsem score-answers --prompt sc_gpt4v`.

The folder holds `positive-first/gpt4v-<subset>.json` and `negative-first/gpt4v-<subset>.json`
(the positive caption listed first or second, lexsem's orderings `pos_first` and `neg_first`):
a JSON object of records by item key, each with `answer.free_form_answer` (GPT-4V's answer),
`caption`, `negative_caption`, `filename` and `correct` (the authors' verdict); a file may
also hold a summary entry that is no record (`"accuracy": 0.8577`), which is left out.

Each record is matched to the public SugarCrepe item of the same subset and key, and its
caption, negative caption and file name must equal the item's (else a `DataError` naming the
file and key). A record whose key the public file lacks (swap_obj's `108`: the answers cover
246 items, the public file 245) is kept, under its key, so that `score-answers` names it as an
answer about an item not in the benchmark.

    lexsem convert-answers FOLDER OUT.jsonl [--data-dir DIR]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lexsem.errors import DataError

__all__ = ["ORDERINGS", "ConvertStats", "convert_gpt4v_answers", "write_gpt4v_answers"]

# the folders of the published answers -> lexsem's orderings of a pair
ORDERINGS = {"positive-first": "pos_first", "negative-first": "neg_first"}
PROMPT = "sc_gpt4v"


@dataclass
class ConvertStats:
    """What a conversion read: answers per (ordering, subset), the records whose key the
    public items lack (`(ordering, subset, key)`), and the files' entries that are no record."""

    answers: dict[tuple[str, str], int] = field(default_factory=dict)
    unmatched: list[tuple[str, str, str]] = field(default_factory=list)
    not_records: list[tuple[str, str]] = field(default_factory=list)  # (file, key)


def convert_gpt4v_answers(
    folder: Path, items: Iterable[Any]
) -> tuple[list[dict[str, Any]], ConvertStats]:
    """The answer records (`id`, `subset`, `prompt`, `ordering`, `answer`) of the published
    folder, checked against the public SugarCrepe `items` (`PairItem`s, `subset` and `id`)."""
    by_key: Mapping[tuple[str, str], Any] = {(it.subset, str(it.id)): it for it in items}
    subsets = sorted({s for s, _ in by_key})
    out: list[dict[str, Any]] = []
    stats = ConvertStats()
    found = False
    for name, ordering in ORDERINGS.items():
        for subset in subsets:
            path = folder / name / f"gpt4v-{subset}.json"
            if not path.is_file():
                continue
            found = True
            n = 0
            for key, rec in _records(path).items():
                if not isinstance(rec, dict):
                    stats.not_records.append((str(path), key))
                    continue
                answer = _answer(path, key, rec)
                item = by_key.get((subset, key))
                if item is None:
                    stats.unmatched.append((ordering, subset, key))
                else:
                    _check(path, key, rec, item)
                out.append({"id": key, "subset": subset, "prompt": PROMPT, "ordering": ordering,
                            "answer": answer})  # fmt: skip
                n += 1
            stats.answers[(ordering, subset)] = n
    if not found:
        raise DataError(
            "no published answers: expected positive-first/gpt4v-<subset>.json or "
            f"negative-first/gpt4v-<subset>.json for a subset of {', '.join(subsets)}",
            file=folder,
        )
    return out, stats


def write_gpt4v_answers(folder: Path, items: Iterable[Any], out: Path) -> ConvertStats:
    """`convert_gpt4v_answers`, written to `out` as JSON Lines, each record marked as
    lexsem's (`lexsem.outputs.GENERATOR`)."""
    from lexsem.atomic import atomic_open
    from lexsem.outputs import GENERATOR

    records, stats = convert_gpt4v_answers(folder, items)
    with atomic_open(out, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps({**GENERATOR, **rec}, ensure_ascii=False) + "\n")
    return stats


class _Entries(list):  # type: ignore[type-arg]
    """A JSON object's (key, value) pairs, in the file's order."""


def _records(path: Path) -> dict[str, Any]:
    """The file's entries by key (`lexsem.jsonl.read_json`); a key given twice (two answers
    about one item, of which a JSON reader keeps the last silently) is an error naming both
    lines."""
    from lexsem.jsonl import read_json

    data = read_json(path, object_pairs_hook=_Entries)
    if not isinstance(data, _Entries):
        raise DataError(f"expected a JSON object of records, got {type(data).__name__}", file=path)
    keys = [key for key, _ in data]
    if len(set(keys)) != len(keys):
        key = next(k for n, k in enumerate(keys) if k in keys[:n])
        first, second = [line for k, line in _key_lines(path) if k == key][:2]
        raise DataError(
            f"two answers for the key {key!r}, on lines {first} and {second}: keep one",
            file=path,
            item=key,
        )
    return {str(k): _as_dicts(v) for k, v in data}


def _as_dicts(value: Any) -> Any:
    """A value read with `_Entries` for objects, its objects as dicts."""
    if isinstance(value, _Entries):
        return {k: _as_dicts(v) for k, v in value}
    if isinstance(value, list):
        return [_as_dicts(v) for v in value]
    return value


def _key_lines(path: Path) -> list[tuple[str, int]]:
    """(key, line) of each entry of the JSON object in `path` (a file `read_json` read)."""
    text = path.read_text(encoding="utf-8-sig")
    decoder = json.JSONDecoder()
    space = re.compile(r"\s*")
    out: list[tuple[str, int]] = []
    at = space.match(text, space.match(text).end() + 1).end()  # past the opening brace
    while text[at] != "}":
        key, end = decoder.raw_decode(text, at)
        out.append((key, text.count("\n", 0, at) + 1))
        at = space.match(text, space.match(text, end).end() + 1).end()  # past the colon
        at = space.match(text, decoder.raw_decode(text, at)[1]).end()
        if text[at] == ",":
            at = space.match(text, at + 1).end()
    return out


def _answer(path: Path, key: str, rec: dict[str, Any]) -> str | None:
    answer = rec.get("answer")
    if not isinstance(answer, dict) or "free_form_answer" not in answer:
        raise DataError("no answer.free_form_answer", file=path, item=key)
    text = answer["free_form_answer"]
    if text is not None and not isinstance(text, str):
        raise DataError(f"answer.free_form_answer is {type(text).__name__}, not text", file=path,
                        item=key)  # fmt: skip
    return text


def _check(path: Path, key: str, rec: dict[str, Any], item: Any) -> None:
    """The record is about `item`: the same captions and image file."""
    for field_name, value in (("caption", item.pos), ("negative_caption", item.neg),
                              ("filename", item.image)):  # fmt: skip
        if rec.get(field_name) != value:
            raise DataError(
                f"{field_name} {rec.get(field_name)!r} is not the public item's {value!r}",
                file=path,
                item=key,
            )

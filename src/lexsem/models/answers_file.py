"""Recorded answers to multiple-choice prompts, read from a file: a model's output collected
elsewhere (an API run, a benchmark's published answers), answered by the `recorded:` backend
(`lexsem.models.backends.recorded`) and so scored by the same tasks as lexsem's own runs
(`lexsem score-answers`), or imported into a chat model's store (`lexsem ask --import`).

The file is JSON Lines (one object per line) or a JSON list of objects, each with:

- `id`: the item id in the benchmark's files;
- `subset`: the item's subset (may be left out when the benchmark selection has one subset);
- `ordering`: `NPP` / `PNP` / `PPN` (triplets) or `pos_first` / `neg_first` (pairs);
- `answer`: the model's free-form answer (text; `null` for none received);
- `prompt`: optional, a name of `lexsem.tasks.choice.PROMPTS` (else the one given to
  `read_answers`).

Other keys are ignored (lexsem's own files open each record with `"generator": "lexsem"`,
`lexsem.outputs.GENERATOR`, and `ask -o` adds `shots` and `shot_seed`).

Errors name the file and the line (JSONL) or the record (JSON list). `read_answer_records`
keeps where each answer is (`line 3`, `record 3`), for checks made later (`lexsem ask
--import`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lexsem.errors import DataError
from lexsem.jsonl import read_json, read_jsonl
from lexsem.tasks.choice import ORDERINGS, PROMPTS, Answer

__all__ = ["read_answer_records", "read_answers", "recorded_settings"]

_ORDERINGS = {o for names in ORDERINGS.values() for o in names}


def read_answers(path: str | Path, *, prompt: str | None, subset: str | None) -> list[Answer]:
    """The answers of the file at `path` (see the module doc); `prompt` / `subset`: the values
    of records that give none."""
    return [a for _, a in read_answer_records(path, prompt=prompt, subset=subset)]


def read_answer_records(
    path: str | Path, *, prompt: str | None, subset: str | None, require_subset: bool = True
) -> list[tuple[str, Answer]]:
    """`read_answers`, each answer with where it is in the file (`line 3` / `record 3`). With
    `require_subset=False`, a record that gives no subset (and no `subset` default) has subset
    "" (to be told by the benchmark selection)."""
    path = Path(path)
    records = _records(path)
    if not records:
        raise DataError(f"{path}: no answers in the file")
    return [
        (where, _answer(path, where, rec, prompt, subset, require_subset)) for where, rec in records
    ]


def _records(path: Path) -> list[tuple[str, Any]]:
    """(where, record) of the file: a JSON list, or JSON Lines (`lexsem.jsonl`)."""
    try:
        with open(path, "rb") as fh:
            while (block := fh.read(4096)) and not block.strip():
                pass  # white space before the first record
            is_list = block.lstrip().startswith(b"[")
    except OSError as exc:
        raise DataError(f"{path}: cannot read the answers file ({exc})") from None
    if not is_list:
        return [(f"line {n}", rec) for n, rec in read_jsonl(path)]
    data = read_json(path)
    return [(f"record {i}", rec) for i, rec in enumerate(data, 1)]


def _answer(
    path: Path, where: str, rec: Any, prompt: str | None, subset: str | None, require_subset: bool
) -> Answer:
    def bad(why: str) -> DataError:
        return DataError(f"{path}, {where}: {why}")

    if not isinstance(rec, dict):
        raise bad("expected an object with id, ordering and answer")
    missing = [k for k in ("id", "ordering", "answer") if k not in rec]
    if missing:
        raise bad(f"missing {', '.join(missing)}")
    name = rec.get("prompt", prompt)
    if name not in PROMPTS:
        from lexsem.registry import did_you_mean

        known = list(PROMPTS)
        raise bad(
            f"unknown prompt {name!r}{did_you_mean(str(name), known)} (known: {', '.join(known)};"
            " give it per record or with --prompt)"
        )
    if rec["ordering"] not in _ORDERINGS:
        raise bad(f"unknown ordering {rec['ordering']!r} (known: {', '.join(sorted(_ORDERINGS))})")
    sub = rec.get("subset", subset)
    if sub is None and not require_subset:
        sub = ""
    if sub is None:
        raise bad("no subset: give it per record, or select one subset (-b NAME/SUBSET)")
    answer = rec["answer"]
    if answer is not None and not isinstance(answer, str):
        raise bad(f"answer must be text or null, not {type(answer).__name__}")
    return Answer(str(rec["id"]), str(sub), str(name), rec["ordering"], answer)


SETTINGS = ("shots", "shot_seed")  # how the answers were asked (`lexsem ask -o` writes them)


def recorded_settings(path: str | Path) -> dict[str, Any]:
    """The settings the answers of `path` were asked with (`shots`, `shot_seed`), where every
    record gives the same value; none when the records do not say (or disagree)."""
    path = Path(path)
    records = [rec for _, rec in _records(path)]
    out: dict[str, Any] = {}
    for key in SETTINGS:
        values = {json.dumps(rec.get(key)) for rec in records if isinstance(rec, dict)}
        if len(values) == 1 and (value := json.loads(values.pop())) is not None:
            out[key] = value
    return out

"""Label Studio's JSON exports of a study's projects read back as one answers table
(`lexsem annotate labelstudio-import EXPORT... --key KEY`, docs/human-studies.md, "Label
Studio"), through the key `lexsem.annotate.labelstudio_export` wrote.

An export is a list of tasks, each with its ``data`` and ``annotations``; an annotation's
``result`` holds ``{"from_name": "choice", "type": "choices", "value": {"choices": [...]}}``
and, for an edit, ``{"from_name": "edit", "type": "textarea", "value": {"text": [...]}}``;
``completed_by`` (the user's numeric id, or the user as an object with its ``id``),
``lead_time``, ``created_at``, ``was_cancelled``. `import_exports(paths, key)` reads every
export given (BiVLC's ``i2t`` and ``t2i`` projects together) into one table: one row per
annotation, the chosen position mapped back to its option id through the key, a cancelled
annotation (Label Studio's skip) as ``skip``, the annotator as ``ls-<user id>`` (an opaque id;
an e-mail in the export is never read). Every field lexsem reads is type-checked (an error
names the file, the task and the field); one task annotated twice by one annotator (within an
export or across two), a task the key does not know, and Label Studio's JSON_MIN and CSV
exports (which do not say who chose what) are errors saying so. Nothing is returned until
every export has been read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.labelstudio import KEY_FILE, ExportKey, KeyTask
from lexsem.errors import DataError
from lexsem.jsonl import read_json, read_text
from lexsem.results.answers_table import ANSWERS_SCHEMA

__all__ = ["import_exports"]


class _ExportModel(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class _TaskData(_ExportModel):
    """The lexsem fields of a task's ``data``."""

    lexsem_study: StrictStr
    lexsem_task: StrictStr


class _Annotation(_ExportModel):
    """The fields of one annotation lexsem reads."""

    id: StrictInt | StrictStr | None = None
    completed_by: Any = None
    result: list[Any] = Field(default_factory=list)
    lead_time: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] | None = None
    created_at: StrictStr | None = None
    was_cancelled: StrictBool = False


class _Task(_ExportModel):
    id: StrictInt | StrictStr | None = None
    data: dict[str, Any]
    annotations: list[Any] = Field(default_factory=list)


def _checked(model: type[BaseModel], value: Any, where: str, prefix: str, path: Path) -> Any:
    """`value` read as `model`, or a `DataError` naming where and the field."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in (prefix, *first["loc"]) if p != "")
        got = first.get("input")
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        raise DataError(f"{where}: {at} is {shown}: {first['msg']}", file=path) from None


def _read_json(path: Path) -> Any:
    """The export's JSON (`lexsem.jsonl.read_json`), or a `DataError` saying what the file is
    when it is not JSON (a CSV or TSV export)."""
    if not path.exists():
        raise DataError("no such Label Studio export", file=path)
    try:
        return read_json(path)
    except DataError as exc:
        if _csv_export(path):
            raise DataError(
                "this is Label Studio's CSV/TSV export, which lexsem cannot read (it has no "
                'annotation results per annotator): export the project as "JSON" instead',
                file=path,
            ) from None
        raise DataError(
            f"not a Label Studio JSON export ({exc.detail})", file=path, line=exc.line
        ) from None


def _csv_export(path: Path) -> bool:
    """Whether the first line of `path` is the header of Label Studio's CSV or TSV export."""
    try:
        head = read_text(path).lstrip()[:2000].splitlines()[:1]
    except DataError:
        return False
    return bool(head) and any(sep in head[0] for sep in (",", "\t")) and "lexsem_task" in head[0]


def _min_export(task: Any) -> bool:
    """Whether `task` is a row of Label Studio's JSON_MIN export: the task's data flattened
    with the annotation's choices, and no ``data`` / ``annotations``."""
    return isinstance(task, dict) and "data" not in task and "lexsem_task" in task


def _choice(result: list[Any], name: str, kind: str) -> Any:
    for r in result:
        if isinstance(r, dict) and r.get("from_name") == name and r.get("type") == kind:
            values = (r.get("value") or {}).get("choices" if kind == "choices" else "text")
            if isinstance(values, list) and values:
                return values[0]
    return None


def _annotator(who: Any) -> str | None:
    if isinstance(who, dict):
        who = who.get("id")
    if isinstance(who, bool) or not isinstance(who, (int, str)) or str(who) == "":
        return None
    return f"ls-{who}"


def import_exports(
    paths: Sequence[str | Path], key: ExportKey, *, key_path: str | Path = KEY_FILE,
    study: str | None = None,
) -> pa.Table:  # fmt: skip
    """The answers table of Label Studio JSON exports of one study's projects (see the module
    doc); `key` is the study's export key (read from `key_path`, named in errors)."""
    if not paths:
        raise DataError("no Label Studio export given")
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}  # (task key, annotator) -> where it was answered
    for path in map(Path, paths):
        raw = _read_json(path)
        if isinstance(raw, dict) and isinstance(raw.get("data"), dict):
            raw = [raw]  # one task exported alone
        if not isinstance(raw, list):
            raise DataError("a Label Studio JSON export is a list of tasks", file=path)
        if raw and _min_export(raw[0]):
            raise DataError(
                "this is Label Studio's JSON_MIN export, which keeps one choice per task and "
                'not who gave it: export the project as "JSON" instead',
                file=path,
            )
        for n, item in enumerate(raw, 1):
            where = f"task {n}" + (f" (id {item.get('id')})" if isinstance(item, dict) else "")
            data = item.get("data") if isinstance(item, dict) else None
            if not isinstance(data, dict) or "lexsem_task" not in data:
                raise DataError(f"{where}: no lexsem task data (lexsem_task): not a task "
                                "labelstudio-export wrote", file=path)  # fmt: skip
            task = _checked(_Task, item, where, "", path)
            ids = _checked(_TaskData, data, where, "data", path)
            if ids.lexsem_study != key.study or ids.lexsem_task not in key.tasks:
                raise DataError(
                    f"{where}: task {ids.lexsem_task} of study {ids.lexsem_study!r} is not in "
                    f"the key {key_path} (study {key.study!r}): give the key of the export "
                    "these projects were made from",
                    file=path,
                )
            rows += _task_rows(task, key.tasks[ids.lexsem_task], ids.lexsem_task,
                               where, path, seen, study or key.study)  # fmt: skip
    return pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)


def _task_rows(
    task: _Task, info: KeyTask, key: str, where: str, path: Path,
    seen: dict[tuple[str, str], str], study: str,
) -> list[dict[str, Any]]:  # fmt: skip
    """The answers of one task of an export."""
    rows: list[dict[str, Any]] = []
    for k, raw in enumerate(task.annotations, 1):
        a = _checked(_Annotation, raw, where, f"annotations.{k}", path)
        who = _annotator(a.completed_by)
        if who is None:
            raise DataError(f"{where}: annotation {k} has no annotator (completed_by)",
                            file=path)  # fmt: skip
        here = f"{path}, {where}, annotation {a.id if a.id is not None else k}"
        if (key, who) in seen:
            raise DataError(
                f"{where}: {info.kind} item {info.item_id} annotated twice by {who} "
                f"({seen[key, who]}; {here}): delete one in Label Studio and export again",
                file=path,
            )
        seen[key, who] = here
        picked = None if a.was_cancelled else _choice(a.result, "choice", "choices")
        if a.was_cancelled:
            answer = "skip"
        elif picked is None:
            raise DataError(f"{where}: annotation {k} has no choice", file=path)
        elif str(picked).isdigit() and 1 <= int(str(picked)) <= len(info.options):
            answer = info.options[int(str(picked)) - 1]
        elif str(picked) in FIXED_CHOICES[info.kind]:
            answer = str(picked)
        else:
            raise DataError(f"{where}: choice {picked!r} is not one of the task's",
                            file=path)  # fmt: skip
        edit = _choice(a.result, "edit", "textarea")
        if answer == "edit" and not (isinstance(edit, str) and edit.strip()):
            raise DataError(f"{where}: an edit without the edited text", file=path)
        rows.append(
            {
                "study": study,
                "kind": info.kind,
                "item_id": info.item_id,
                "subset": info.subset,
                "benchmark": info.benchmark,
                "annotator": who,
                "practice": info.practice,
                "gold": info.gold,
                "options": list(info.options),
                "answer": answer,
                "correct": None if info.correct is None else answer == info.correct,
                "edit": str(edit) if answer == "edit" and edit is not None else None,
                "seconds": float(a.lead_time or 0.0),
                "answered_at": a.created_at or "",
                "seed": info.seed,
            }
        )
    return rows

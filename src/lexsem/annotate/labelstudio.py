"""A study's tasks to Label Studio and its annotations back, for teams that run their studies
there (docs/human-studies.md, "Label Studio").

`export_tasks(tasks, folder)` writes, per task kind, ``<kind>.tasks.json`` (Label Studio's
task import format: a list of ``{"data": {...}}``) and ``<kind>.config.xml`` (its labelling
configuration: ``Text`` / ``Image`` objects and one ``Choices`` control, plus a ``TextArea``
for the edit of a validation item). The options of a task are shown in one seeded random order
(``numpy.random.default_rng(bootstrap_seed(seed, kind, item_id))``, recorded in the task's
data), the same for every annotator: Label Studio serves one task to all. The choices are the
positions (``1``, ``2``, ...) and the kind's fixed choices (``none``, ``both``, ``accept`` /
``edit`` / ``reject``).

`import_export(file, study)` reads Label Studio's JSON export (a list of tasks, each with its
``data`` and ``annotations``; an annotation's ``result`` holds ``{"from_name": "choice",
"type": "choices", "value": {"choices": [...]}}`` and, for an edit, ``{"from_name": "edit",
"type": "textarea", "value": {"text": [...]}}``; ``completed_by``, ``lead_time``,
``created_at``, ``was_cancelled``) into the answers table of docs/human-studies.md: one row
per annotation, the chosen position mapped back to its option id, a cancelled annotation
(Label Studio's skip) as ``skip``, the annotator as ``ls-<user id>`` (an opaque id; Label
Studio's e-mail, where an export holds one, is never read). Every field lexsem reads is
type-checked (an error names the task and the field); two annotations of one task by one
annotator, and Label Studio's JSON_MIN and CSV exports (which lack who answered what), are
errors saying so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal
from xml.sax.saxutils import quoteattr

import numpy as np
import pyarrow as pa
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.atomic import atomic_open
from lexsem.errors import DataError
from lexsem.results.answers_table import ANSWERS_SCHEMA
from lexsem.stats.seeds import bootstrap_seed

__all__ = [
    "TaskItem",
    "TaskOption",
    "export_tasks",
    "import_export",
    "labelling_config",
]

Kind = Literal["tot", "itt", "pair", "bivlc_i2t", "bivlc_t2i", "best_of_k", "ambiguity",
               "validate"]  # fmt: skip

QUESTION = {
    "tot": "Which caption means something different from the other two?",
    "itt": "Which caption does not describe the image?",
    "pair": "Which caption describes the image?",
    "bivlc_i2t": "Choose the description that BEST represents the image.",
    "bivlc_t2i": "Choose the image that BEST matches the description.",
    "best_of_k": "Select one image that adequately represents the description, or None.",
    "ambiguity": "Choose the image that best matches the description, or Both.",
    "validate": "Does the generated caption keep the meaning of the original? Accept, edit "
    "(write the corrected caption) or reject.",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskOption(_Model):
    """One option of a task: a text or an image (a path or URL Label Studio can open)."""

    id: str
    text: str | None = None
    image: str | None = None


class TaskItem(_Model):
    """One question of a study: its kind, item, base (a text or an image), options and the
    right option (None where the item has none)."""

    kind: Kind
    item_id: str
    subset: str = ""
    benchmark: str = ""
    options: list[TaskOption] = Field(default_factory=list)
    correct: str | None = None
    base_text: str | None = None
    base_image: str | None = None
    context: list[tuple[str, str]] = Field(default_factory=list)  # (label, text) shown above
    edit_text: str | None = None  # validate: the generated text, prefilled for editing
    practice: bool = False
    gold: bool = False


def _check_tasks(tasks: Sequence[TaskItem | dict[str, Any]]) -> list[TaskItem]:
    out = []
    for n, t in enumerate(tasks, 1):
        try:
            out.append(t if isinstance(t, TaskItem) else TaskItem.model_validate(t))
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise DataError(f"task {n}: {at}: {first['msg']}") from None
    return out


def _n_options(tasks: list[TaskItem]) -> int:
    return max((len(t.options) for t in tasks), default=0)


def labelling_config(kind: str, n_options: int) -> str:
    """The Label Studio labelling configuration of `kind` with `n_options` options."""
    parts = ["<View>", f"  <Header value={quoteattr(QUESTION[kind])}/>"]
    parts.append('  <Text name="context" value="$context"/>')
    if kind in ("itt", "pair", "bivlc_i2t"):
        parts.append('  <Image name="base" value="$base_image" maxWidth="512px"/>')
    if kind in ("bivlc_t2i", "best_of_k", "ambiguity"):
        parts.append('  <Text name="base" value="$base_text"/>')
    for k in range(1, n_options + 1):
        field = "image" if kind in ("bivlc_t2i", "best_of_k", "ambiguity") else "text"
        parts.append(f'  <Header value="({k})"/>')
        if field == "image":
            parts.append(f'  <Image name="option{k}" value="$option{k}" maxWidth="384px"/>')
        else:
            parts.append(f'  <Text name="option{k}" value="$option{k}"/>')
    to = "base" if kind in ("itt", "pair", "bivlc_i2t", "bivlc_t2i", "best_of_k",
                            "ambiguity") else "context"  # fmt: skip
    parts.append(f'  <Choices name="choice" toName="{to}" choice="single" required="true">')
    for k in range(1, n_options + 1):
        parts.append(f'    <Choice value="{k}"/>')
    for fixed in FIXED_CHOICES[kind]:
        parts.append(f"    <Choice value={quoteattr(fixed)}/>")
    parts.append("  </Choices>")
    if kind == "validate":
        parts.append('  <TextArea name="edit" toName="context" value="$edit_text" '
                     'placeholder="The corrected caption" maxSubmissions="1"/>')  # fmt: skip
    parts.append("</View>")
    return "\n".join(parts) + "\n"


def _task_data(t: TaskItem, study: str, seed: int, n_options: int) -> dict[str, Any]:
    task_seed = bootstrap_seed(seed, t.kind, t.item_id)
    order = np.random.default_rng(task_seed).permutation(len(t.options)).tolist()
    shown = [t.options[i] for i in order]
    data: dict[str, Any] = {
        "lexsem_study": study,
        "kind": t.kind,
        "item_id": t.item_id,
        "subset": t.subset,
        "benchmark": t.benchmark,
        "options": [o.id for o in shown],
        "correct": t.correct,
        "practice": t.practice,
        "gold": t.gold,
        "seed": task_seed % 2**63,
        "context": "\n".join(f"{label}: {text}" for label, text in t.context),
        "base_text": t.base_text or "",
        "base_image": t.base_image or "",
        "edit_text": t.edit_text or "",
    }
    for k in range(1, n_options + 1):
        o = shown[k - 1] if k <= len(shown) else None
        data[f"option{k}"] = "" if o is None else (o.image or o.text or "")
    return data


def export_tasks(
    tasks: Sequence[TaskItem | dict[str, Any]], folder: str | Path, *, study: str, seed: int = 0
) -> list[Path]:
    """Write `<kind>.tasks.json` and `<kind>.config.xml` for each kind of `tasks` into
    `folder` (see the module doc); the files written."""
    checked = _check_tasks(tasks)
    if not checked:
        raise DataError("no tasks to export")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in dict.fromkeys(t.kind for t in checked):
        mine = [t for t in checked if t.kind == kind]
        n = _n_options(mine)
        body = [{"data": _task_data(t, study, seed, n)} for t in mine]
        path = folder / f"{kind}.tasks.json"
        with atomic_open(path, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=1, ensure_ascii=False)
            fh.write("\n")
        conf = folder / f"{kind}.config.xml"
        with atomic_open(conf, "w", encoding="utf-8") as fh:
            fh.write(labelling_config(kind, n))
        written += [path, conf]
    return written


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


_Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]


class _ExportModel(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class _TaskData(_ExportModel):
    """The lexsem fields of a task's ``data`` (the ones `_task_data` writes)."""

    kind: Kind
    item_id: StrictStr | StrictInt
    lexsem_study: StrictStr = ""
    subset: StrictStr = ""
    benchmark: StrictStr = ""
    options: list[StrictStr] = Field(default_factory=list)
    correct: StrictStr | None = None
    practice: StrictBool = False
    gold: StrictBool = False
    seed: _Int64 = 0


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


def _checked(model: type[_ExportModel], value: Any, where: str, prefix: str, path: Path) -> Any:
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
    """The export's JSON, or a `DataError` saying what the file is when it is not JSON (a
    CSV or TSV export)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("no such Label Studio export", file=path) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"not a Label Studio JSON export ({exc})", file=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        head = text.lstrip()[:2000].splitlines()[:1]
        if head and any(sep in head[0] for sep in (",", "\t")) and "item_id" in head[0]:
            raise DataError(
                "this is Label Studio's CSV/TSV export, which lexsem cannot read (it has no "
                'annotation results per annotator): export the project as "JSON" instead',
                file=path,
            ) from None
        raise DataError(f"not a Label Studio JSON export ({exc})", file=path) from None


def _min_export(task: Any) -> bool:
    """Whether `task` is a row of Label Studio's JSON_MIN export: the task's data flattened
    with the annotation's choices, and no ``data`` / ``annotations``."""
    return (
        isinstance(task, dict)
        and "data" not in task
        and "annotations" not in task
        and ("item_id" in task or "kind" in task or "annotator" in task)
    )


def import_export(path: str | Path, *, study: str | None = None) -> pa.Table:
    """The answers table of a Label Studio JSON export of tasks `export_tasks` wrote (see the
    module doc); a task or annotation lexsem cannot read is an error naming it and its field.
    A cancelled annotation (Label Studio's skip) is the answer ``skip``; two annotations of one
    task by one annotator are an error naming both."""
    path = Path(path)
    raw = _read_json(path)
    if isinstance(raw, dict) and isinstance(raw.get("data"), dict):
        raw = [raw]  # one task exported alone
    if not isinstance(raw, list):
        raise DataError("a Label Studio JSON export is a list of tasks", file=path)
    if raw and _min_export(raw[0]):
        raise DataError(
            "this is Label Studio's JSON_MIN export, which keeps one choice per task and not "
            'who gave it: export the project as "JSON" instead',
            file=path,
        )
    rows: list[dict[str, Any]] = []
    for n, item in enumerate(raw, 1):
        where = f"task {n}" + (f" (id {item.get('id')})" if isinstance(item, dict) else "")
        data = item.get("data") if isinstance(item, dict) else None
        if (
            not isinstance(data, dict)
            or "item_id" not in data
            or data.get("kind") not in FIXED_CHOICES
        ):
            raise DataError(f"{where}: no lexsem task data (kind, item_id): exported by "
                            "lexsem?", file=path)  # fmt: skip
        task = _checked(_Task, item, where, "", path)
        rows += _task_rows(task, _checked(_TaskData, data, where, "data", path), where, path,
                           study)  # fmt: skip
    return pa.Table.from_pylist(rows, schema=ANSWERS_SCHEMA)


def _task_rows(
    task: _Task, data: _TaskData, where: str, path: Path, study: str | None
) -> list[dict[str, Any]]:
    """The answers of one task of the export."""
    rows: list[dict[str, Any]] = []
    by: dict[str, Any] = {}
    for k, raw in enumerate(task.annotations, 1):
        a = _checked(_Annotation, raw, where, f"annotations.{k}", path)
        who = _annotator(a.completed_by)
        if who is None:
            raise DataError(f"{where}: an annotation without its annotator", file=path)
        if who in by:
            raise DataError(
                f"{where}: annotated twice by {who} (annotations {by[who]} and "
                f"{a.id if a.id is not None else k}): delete one in Label Studio and export "
                "again",
                file=path,
            )
        by[who] = a.id if a.id is not None else k
        picked = None if a.was_cancelled else _choice(a.result, "choice", "choices")
        if a.was_cancelled:
            answer = "skip"
        elif picked is None:
            raise DataError(f"{where}: an annotation without its annotator or choice",
                            file=path)  # fmt: skip
        elif str(picked).isdigit() and 1 <= int(str(picked)) <= len(data.options):
            answer = data.options[int(str(picked)) - 1]
        elif str(picked) in FIXED_CHOICES[data.kind]:
            answer = str(picked)
        else:
            raise DataError(f"{where}: choice {picked!r} is not one of the task's",
                            file=path)  # fmt: skip
        edit = _choice(a.result, "edit", "textarea")
        if answer == "edit" and not (isinstance(edit, str) and edit.strip()):
            raise DataError(f"{where}: an edit without the edited text", file=path)
        rows.append(
            {
                "study": study if study is not None else data.lexsem_study,
                "kind": data.kind,
                "item_id": str(data.item_id),
                "subset": data.subset,
                "benchmark": data.benchmark,
                "annotator": who,
                "practice": data.practice,
                "gold": data.gold,
                "options": list(data.options),
                "answer": answer,
                "correct": None if data.correct is None else answer == data.correct,
                "edit": str(edit) if answer == "edit" and edit is not None else None,
                "seconds": float(a.lead_time or 0.0),
                "answered_at": a.created_at or "",
                "seed": data.seed,
            }
        )
    return rows

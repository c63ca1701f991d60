"""Stages `export_human_task` and `fold_back_answers`: the human steps of BiVLC (§3 steps 3
and 4; App. H.1 gives the instructions, quoted in `INSTRUCTIONS`), answered in a study of
lexsem's annotation tool (`lexsem annotate`) or in plain files.

`export_human_task` writes, in the build folder's ``human/<task>/``:

- ``tasks.jsonl``: one task per accepted row: ``{"task": ID, "kind": TASK, "description":
  TEXT, "images": {"A": PATH, ...}, "choices": [...]}`` (image paths relative to the build
  folder);
- ``README.md``: the paper's instructions for the task and the answer format;
- ``answers.template.csv``: ``task,answer`` with every task and an empty answer.

It also prints (and writes in the README) the commands of a study of the same tasks:
``lexsem annotate create human/<task>/study.sqlite --from-build stages/NN-<stage>.parquet -k
best_of_k|ambiguity --column ...`` (the stage's own output, its columns named as the stage's
settings name them), ``lexsem annotate serve`` and ``lexsem annotate export ... --answers
human/<task>/answers.parquet``.

The answers file, ``human/<task>/answers.csv`` (or ``answers.jsonl``, one ``{"task": ID,
"answer": CHOICE}`` per line, or the study's exported ``answers.parquet``; one of them, or the
`answers` setting), is read by `fold_back_answers`. In a CSV or JSONL file every answer must
name a task of ``tasks.jsonl`` and one of its choices (case does not matter); an error names the
file and line. The study's table (`lexsem.results.answers_table`) gives one answer per annotator:
its item ids are the rows' ``source:source_id``, several annotators of one task are combined by
majority, a tie counts against keeping the row (counted as ``ties``); an error names the file,
the row and the item. Until the file exists the build stops at that stage with a message naming
the files; a rerun resumes there (the answers file is part of the stage's digest, so a
corrected file reruns it).

Tasks (the ID is the row's `id` column when given, else ``source:source_id``; a study's item id
is always ``source:source_id``):

- ``best_image`` (step 3): the hard negative caption and its K generated images A, B, C, D...;
  choices: a letter or ``None``. ``None`` rejects the row (``no_good_image``); a letter puts
  that image's path in the column `chosen` (default ``negative_image``). In a study: the
  option ``imageK`` is letter K (A = ``image0``), ``none`` is ``None``.
- ``ambiguity`` (step 4): the original caption and two images, the original and the chosen
  generated one, in an order drawn per task from the build's seed (the letter of the generated
  one is kept in the row, column ``ambiguity_generated``); choices: ``A``, ``B``, ``Both``.
  Choosing the generated image or ``Both`` rejects the row (``ambiguous``), as BiVLC did. In a
  study (which shuffles the two images per annotator itself): ``image0`` is the original image
  (keep), ``image1`` the generated one and ``both`` (ambiguous).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lexsem.atomic import atomic_open
from lexsem.construct.stage import (
    PROVENANCE,
    HumanStepPending,
    Stage,
    StageContext,
    accepted,
    reject,
    row_ids,
)
from lexsem.construct.study_commands import annotate_commands, study_size
from lexsem.errors import DataError, LexsemError
from lexsem.jsonl import read_jsonl
from lexsem.results.answers_table import StudyAnswer, answers_by_item, majority, read_answers

__all__ = [
    "EXPORT_STAGE",
    "FOLD_BACK_STAGE",
    "INSTRUCTIONS",
    "TASKS",
    "export_human_task",
    "fold_back_answers",
]

TASKS = ("best_image", "ambiguity")
HUMAN_DIR = "human"
TASKS_FILE = "tasks.jsonl"
README = "README.md"
TEMPLATE = "answers.template.csv"
ANSWERS = "answers.csv"
ANSWER_FILES = (ANSWERS, "answers.jsonl", "answers.parquet")  # the ones looked for, in order
STUDY_FILE = "study.sqlite"
GENERATED = "ambiguity_generated"  # the letter of the generated image in an ambiguity task
NONE, BOTH = "None", "Both"
STUDY_KIND = {"best_image": "best_of_k", "ambiguity": "ambiguity"}  # task -> study kind

# BiVLC, App. H.1, verbatim
INSTRUCTIONS = {
    "best_image": (
        "Each instance will consist of a text description and 4 images (A,B,C,D). The aim is "
        "to choose the image that represents the information provided in the description, and "
        "discard the rest. It might be that more than one image is acceptable or none is "
        "acceptable. We only need you to select one, if available, or none.\n\n"
        "Instructions:\n\n"
        "Select one image that adequately represents the description. In case none of the "
        'images adequately represent the description, select the answer "None".\n\n'
        "Important:\n\n"
        "- 1) All information presented in the text description must appear in the image.\n"
        "- 2) Aesthetic defects are accepted, such as deformed faces, arms, hands etc."
    ),
    "ambiguity": (
        "Each instance will consist of a description and two images. The objective is to "
        "choose the image that best represents the description or, in case both images "
        'represent the description equally well, choose "Both".\n\n'
        "Instructions:\n\n"
        "Choose the image that best matches the description, in the case that both images "
        'match the description equally well choose "Both".\n\n'
        "Important:\n\n"
        "- 1) Aesthetic defects are accepted, such as deformed faces, arms, hands etc."
    ),
}
STEP = {"best_image": "BiVLC §3, step 3", "ambiguity": "BiVLC §3, step 4"}


def _task_name(task: str, where: str) -> str:
    if task not in TASKS:
        raise LexsemError(f"{where}: `task` is one of {', '.join(TASKS)}, not {task!r}")
    return task


def _folder(out: Path, task: str, folder: str | None) -> Path:
    return out / (folder or f"{HUMAN_DIR}/{task}")


def _column(rows: Any, name: str, setting: str, where: str) -> list[Any]:
    if name not in rows.column_names:
        raise LexsemError(
            f"{where}: the rows have no column {name!r} (setting `{setting}`); they have "
            f"{', '.join(rows.column_names)}"
        )
    return rows[name].to_pylist()


def _ids(rows: Any, id_column: str | None, where: str) -> list[str]:
    if id_column is not None:
        ids = [str(v) for v in _column(rows, id_column, "id", where)]
    else:
        ids = [f"{s}:{i}" for s, i in zip(rows["source"].to_pylist(),
                                           rows["source_id"].to_pylist(), strict=True)]  # fmt: skip
    keep = accepted(rows).to_pylist()
    seen: dict[str, int] = {}
    for n, (ok, key) in enumerate(zip(keep, ids, strict=True)):
        if ok and key in seen:
            raise LexsemError(
                f"{where}: rows {seen[key] + 1} and {n + 1} have the same task id {key!r} (give "
                "an `id` column that tells them apart)"
            )
        if ok:
            seen[key] = n
    return ids


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def export_human_task(
    rows: Any, ctx: StageContext | None, *, task: str = "best_image",
    caption: str = "negative_caption", images: str = "images", positive_caption: str = "caption",
    positive_image: str = "image", chosen: str = "negative_image", id: str | None = None,
    folder: str | None = None,
) -> Any:  # fmt: skip
    """Write the tasks of the accepted rows for people (see the module doc); the rows are
    returned unchanged (an ``ambiguity`` task adds the column ``ambiguity_generated``)."""
    import numpy as np
    import pyarrow as pa

    where = "export_human_task"
    task = _task_name(task, where)
    if ctx is None:
        raise LexsemError(f"{where}: needs the build folder (a StageContext)")
    keep = accepted(rows).to_pylist()
    ids = _ids(rows, id, where)
    tasks: list[dict[str, Any]] = []
    generated: list[str | None] = [None] * rows.num_rows
    if task == "best_image":
        texts = _column(rows, caption, "caption", where)
        lists = _column(rows, images, "images", where)
        for i, ok in enumerate(keep):
            if not ok:
                continue
            paths = list(lists[i] or [])
            if not paths:
                raise LexsemError(f"{where}: accepted row {ids[i]} has no images in {images!r}")
            letters = _letters(len(paths))
            tasks.append({"task": ids[i], "kind": task, "description": texts[i],
                          "images": dict(zip(letters, paths, strict=True)),
                          "choices": [*letters, NONE]})  # fmt: skip
    else:
        texts = _column(rows, positive_caption, "positive_caption", where)
        originals = _column(rows, positive_image, "positive_image", where)
        chosen_images = _column(rows, chosen, "chosen", where)
        rng = np.random.default_rng(ctx.seed)
        for i, ok in enumerate(keep):
            if not ok:
                continue
            if not chosen_images[i] or not originals[i]:
                raise LexsemError(
                    f"{where}: accepted row {ids[i]} lacks an image in {positive_image!r} or "
                    f"{chosen!r} (fold back the best_image answers first)"
                )
            first_generated = bool(rng.integers(2))
            pair = (
                [chosen_images[i], originals[i]] if first_generated
                else [originals[i], chosen_images[i]]
            )  # fmt: skip
            generated[i] = "A" if first_generated else "B"
            tasks.append({"task": ids[i], "kind": task, "description": texts[i],
                          "images": dict(zip("AB", pair, strict=True)),
                          "choices": ["A", "B", BOTH]})  # fmt: skip
    target = _folder(ctx.out, task, folder)
    target.mkdir(parents=True, exist_ok=True)
    with atomic_open(target / TASKS_FILE, encoding="utf-8") as fh:
        for t in tasks:
            fh.write(json.dumps(t, ensure_ascii=False) + "\n")
    with atomic_open(target / TEMPLATE, encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["task", "answer"])
        writer.writerows([t["task"], ""] for t in tasks)
    roles = (
        {"caption": caption, "images": images}
        if task == "best_image"
        else {"caption": positive_caption, "image0": positive_image, "image1": chosen}
    )
    commands = study_commands(ctx, task, target, roles)
    with atomic_open(target / README, encoding="utf-8") as fh:
        fh.write(_readme(task, len(tasks), commands, ctx.sized))
    ctx.count("tasks", len(tasks))
    ctx.log(f"{len(tasks)} {task} tasks -> {target / TASKS_FILE}")
    for line in commands:
        ctx.log(line)
    if task == "ambiguity":
        if GENERATED in rows.column_names:
            rows = rows.drop_columns([GENERATED])
        rows = rows.append_column(GENERATED, pa.array(generated, pa.string()))
    return rows


def study_commands(ctx: StageContext, task: str, target: Path, roles: dict[str, str]) -> list[str]:
    """The `lexsem annotate` commands of a study of the stage's tasks: create it from the
    stage's output, serve it, export its answers where `fold_back_answers` looks for them (none
    outside a build, where the output file is not known)."""
    if not ctx.output:
        return []
    return annotate_commands(
        target / STUDY_FILE, ctx.out / ctx.output, STUDY_KIND[task], roles,
        f"{ctx.out.name}: {task.replace('_', ' ')}", target / ANSWER_FILES[2],
    )  # fmt: skip


def _size(n: int, sized: Sequence[str] = ()) -> str:
    return study_size(n, "task", "the others go unanswered, an error unless the stage "
                      "fold_back_answers has allow_missing = true, which rejects them",
                      sized)  # fmt: skip


def _readme(task: str, n: int, commands: list[str], sized: Sequence[str] = ()) -> str:
    answer = (
        "the letter of the image you choose, or `None`"
        if task == "best_image"
        else "the letter of the image you choose, or `Both`"
    )
    study = (
        "## Answers in a study (lexsem annotate)\n\n"
        "Create a study of these tasks from the build's stage output, serve it, and export "
        "its answers here (add `--annotators N --overlap K` to the first command for N "
        "personal links and K annotators per task; several answers to a task are combined by "
        "majority, a tie counts against keeping the row):\n\n"
        + "".join(f"    {c}\n" for c in commands)
        + f"\nThe study size: {_size(n, sized)}.\n\n"
        + "Then run the same `lexsem build` command again.\n\n"
        if commands
        else ""
    )
    return (
        f"# Human task: {task} ({STEP[task]})\n\n"
        f"{n} tasks in `{TASKS_FILE}`, one JSON object per line: `task` (its id), "
        "`description` (the text), `images` (a letter for each image: its path relative to the "
        "build folder) and `choices`.\n\n"
        "## Instructions (BiVLC, App. H.1)\n\n"
        f"{INSTRUCTIONS[task]}\n\n" + study + "## Answers in a file\n\n"
        f"Copy `{TEMPLATE}` to `{ANSWERS}` in this folder and write in the `answer` column "
        f"{answer} for every task (or write `answers.jsonl`, one "
        '`{"task": ID, "answer": CHOICE}` per line). Then run the same `lexsem build` command '
        "again: it checks every answer and goes on from here.\n"
    )


def _readme_commands(readme: Path) -> list[str]:
    """The `lexsem annotate` commands the export stage wrote in `readme` (none if unreadable)."""
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [x.strip() for x in lines if x.startswith("    lexsem annotate ")]


def _answers_path(out: Path, task: str, folder: str | None, answers: str | None) -> Path:
    if answers is not None:
        p = Path(answers).expanduser()
        return p if p.is_absolute() else out / p
    base = _folder(out, task, folder)
    found = [base / name for name in ANSWER_FILES if (base / name).is_file()]
    if len(found) > 1:
        raise LexsemError(
            f"{base}: {len(found)} answer files ({', '.join(p.name for p in found)}); keep the "
            "one to use, or name it with the `answers` setting"
        )
    return found[0] if found else base / ANSWERS


def _read_tasks(path: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DataError(f"{path}: no tasks file (run the export_human_task stage first)")
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, t in read_jsonl(path):
        try:
            out[str(t["task"])] = (n, t)
        except (KeyError, TypeError):
            raise DataError(f"{path}, line {n}: not a task (JSON with `task`)") from None
    return out


def _read_answers(path: Path) -> list[tuple[int, str, str]]:
    """(line, task, answer) of each answer in the file (an empty answer is left out)."""
    found: list[tuple[int, str, str]] = []
    try:
        if path.suffix.lower() == ".jsonl":
            for n, row in read_jsonl(path):
                try:
                    found.append((n, str(row["task"]), str(row["answer"] or "").strip()))
                except (KeyError, TypeError):
                    raise DataError(
                        f"{path}, line {n}: not an answer (a JSON object with `task` and `answer`)"
                    ) from None
        else:
            with open(path, encoding="utf-8", newline="") as fh:
                reader = csv.reader(fh)
                header = [h.strip().lower() for h in next(reader, [])]
                if "task" not in header or "answer" not in header:
                    raise DataError(f"{path}, line 1: the header must name `task` and `answer`")
                at, ans = header.index("task"), header.index("answer")
                for row in reader:
                    n = reader.line_num
                    if not any(c.strip() for c in row):
                        continue
                    if len(row) <= max(at, ans):
                        raise DataError(f"{path}, line {n}: {len(row)} fields, not task,answer")
                    found.append((n, row[at].strip(), row[ans].strip()))
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    return [a for a in found if a[2]]


def _answer_files(out: Path, **settings: Any) -> list[Path]:
    """The files `fold_back_answers` reads (their sha256 is part of its digest)."""
    task = str(settings.get("task", "best_image"))
    folder, answers = settings.get("folder"), settings.get("answers")
    tasks = _folder(out, task, folder) / TASKS_FILE
    return [tasks, _answers_path(out, task, folder, answers)]


def fold_back_answers(
    rows: Any, ctx: StageContext | None, *, task: str = "best_image", images: str = "images",
    chosen: str = "negative_image", id: str | None = None, folder: str | None = None,
    answers: str | None = None, allow_missing: bool = False,
) -> Any:  # fmt: skip
    """The rows with people's answers applied (see the module doc)."""
    import pyarrow as pa

    where = "fold_back_answers"
    task = _task_name(task, where)
    if ctx is None:
        raise LexsemError(f"{where}: needs the build folder (a StageContext)")
    tasks_path = _folder(ctx.out, task, folder) / TASKS_FILE
    answers_path = _answers_path(ctx.out, task, folder, answers)
    known = _read_tasks(tasks_path)
    keep = accepted(rows).to_pylist()
    ids = _ids(rows, id, where)
    todo = [key for ok, key in zip(keep, ids, strict=True) if ok and key in known]
    if not todo:  # nothing was asked: no answers to wait for
        ctx.count("answers", 0)
        return rows
    if not answers_path.is_file():
        # without an `answers` setting any of ANSWER_FILES is read: the study's export is the last
        missing = (
            f"{answers_path}" if answers is not None
            else f"in {answers_path.parent} ({', '.join(ANSWER_FILES)})"
        )  # fmt: skip
        raise HumanStepPending(
            f"{where}: waiting for people: no answers file {missing}. The {task} tasks are "
            f"in {tasks_path} (instructions, and the commands of a study of them: "
            f"{tasks_path.parent / README}); fill in the answers, or export the study's answers, "
            f"and run the same command again. In a study, {_size(len(todo), ctx.sized)}",
            commands=_readme_commands(tasks_path.parent / README),
            answers=answers_path if answers is not None else answers_path.parent / ANSWER_FILES[-1],
        )
    given: dict[str, tuple[int, str]] = {}
    in_file: list[tuple[int, str, str]] = []
    if answers_path.suffix.lower() == ".parquet":
        given, ties, n_answers = _study_given(rows, keep, ids, known, task, images, answers_path,
                                              tasks_path)  # fmt: skip
        ctx.count("study answers", n_answers)
        ctx.count("ties", ties)
    else:
        in_file = _read_answers(answers_path)
    for n, key, answer in in_file:
        if key not in known:
            raise DataError(f"{answers_path}, line {n}: no task {key!r} in {tasks_path}")
        choices = {str(c).casefold(): str(c) for c in known[key][1].get("choices") or []}
        if answer.casefold() not in choices:
            raise DataError(
                f"{answers_path}, line {n}: task {key!r}: answer {answer!r} is not one of "
                f"{', '.join(choices.values())}"
            )
        if key in given:
            raise DataError(
                f"{answers_path}, line {n}: task {key!r} is answered again (first on line "
                f"{given[key][0]})"
            )
        given[key] = (n, choices[answer.casefold()])
    unanswered = [key for key in todo if key not in given]
    if unanswered and not allow_missing:
        raise DataError(
            f"{answers_path}: {len(unanswered)} of {len(todo)} tasks have no answer (first: "
            f"{unanswered[0]!r}); answer them, or set allow_missing = true to reject them"
        )
    reasons: list[str | None] = [None] * rows.num_rows
    answered: dict[int, tuple[str, str]] = {}  # row -> (task key, answer)
    for i, (ok, key) in enumerate(zip(keep, ids, strict=True)):
        if ok and key in known:
            answer = given.get(key, (0, None))[1]
            if answer is None:
                reasons[i] = "unanswered"
            else:
                answered[i] = (key, answer)
    if task == "best_image":
        lists = _column(rows, images, "images", where)
        picked: list[str | None] = [None] * rows.num_rows
        for i, (key, answer) in answered.items():
            if answer == NONE:
                reasons[i] = "no_good_image"
            else:
                path = known[key][1]["images"][answer]
                if path not in (lists[i] or []):
                    raise DataError(
                        f"{tasks_path}, line {known[key][0]}: task {key!r} shows an image its "
                        f"row does not have ({path}); export the tasks again"
                    )
                picked[i] = path
        if chosen in rows.column_names:
            rows = rows.drop_columns([chosen])
        rows = rows.append_column(chosen, pa.array(picked, pa.string()))
    else:
        letters = _column(rows, GENERATED, GENERATED, where)
        for i, (_, answer) in answered.items():
            if answer in (BOTH, letters[i]):
                reasons[i] = "ambiguous"
    ctx.count("answers", sum(1 for key in todo if key in given))
    for reason in ("no_good_image", "ambiguous", "unanswered"):
        ctx.count(reason, reasons.count(reason))
    return reject(rows, reasons)


def read_study_answers(path: Path, task: str) -> dict[str, list[StudyAnswer]]:
    """Item id -> the answers of `task`'s study kind in the answers table at `path`
    (`lexsem.results.answers_table.answers_by_item`); a table with no answer of that kind is an
    error naming the file and the kinds it has."""
    kind = STUDY_KIND[task]
    table, _, _ = read_answers(path)
    out = answers_by_item(table, str(path), kind)
    kinds = sorted({str(k) for k in table["kind"].to_pylist()})
    if kind not in kinds:
        raise DataError(
            f"{path}: no {kind} answers (the {task} task's study kind); the table has "
            f"{', '.join(kinds) or 'none'}"
        )
    return out


def _study_given(
    rows: Any, keep: list[bool], ids: list[str], known: dict[str, tuple[int, dict[str, Any]]],
    task: str, images: str, path: Path, tasks_path: Path,
) -> tuple[dict[str, tuple[int, str]], int, int]:  # fmt: skip
    """The answer of each task from a study's answers table, in the file's vocabulary (a
    letter, ``None`` or ``Both``), several annotators combined by majority (a tie against
    keeping the row); with the number of ties and of answers used."""
    by_item = read_study_answers(path, task)
    items = row_ids(rows[PROVENANCE[0]].to_pylist(), rows[PROVENANCE[1]].to_pylist())
    lists = _column(rows, images, "images", "fold_back_answers") if task == "best_image" else []
    generated = (
        _column(rows, GENERATED, GENERATED, "fold_back_answers") if task == "ambiguity" else []
    )
    given: dict[str, tuple[int, str]] = {}
    ties = used = 0
    for i, (ok, key, item) in enumerate(zip(keep, ids, items, strict=True)):
        if not ok or key not in known or item not in by_item:
            continue
        answers = by_item.pop(item)
        choices = []
        for a in answers:
            if task == "best_image":
                k = len(lists[i] or [])
                options = {f"image{j}": _letters(k)[j] for j in range(k)} | {"none": NONE}
            else:
                options = {"image0": "keep", "image1": "ambiguous", "both": "ambiguous"}
            if a.answer not in options:
                raise DataError(
                    f"{path}, row {a.row}: item {item!r}: answer {a.answer!r} is not one of "
                    f"{', '.join(options)}"
                )
            choices.append(options[a.answer])
        choice, tie = majority(choices, on_tie=NONE if task == "best_image" else "ambiguous")
        ties += tie
        used += len(choices)
        if task == "ambiguity":  # the letters of this task's file: generated, or the other
            original = "B" if generated[i] == "A" else "A"
            choice = original if choice == "keep" else BOTH
        given[key] = (answers[0].row, choice)
    if by_item:
        item = next(iter(by_item))
        raise DataError(
            f"{path}, row {by_item[item][0].row}: item {item!r} is not a task of {tasks_path} "
            "(a study's item ids are the rows' source:source_id)"
        )
    return given, ties, used


EXPORT_STAGE = Stage("export_human_task", export_human_task)
FOLD_BACK_STAGE = Stage("fold_back_answers", fold_back_answers, files=_answer_files)

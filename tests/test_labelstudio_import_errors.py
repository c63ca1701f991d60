"""`labelstudio-import` on exports lexsem cannot read as they are: a field of the wrong type or
range, an object where a list belongs, one annotator's two annotations of a task, Label
Studio's JSON_MIN and CSV exports: each is one line naming the task and the field, and nothing
is written. A cancelled annotation (Label Studio's skip) is read as a skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lexsem.annotate.labelstudio import export_tasks, import_export
from lexsem.cli import app
from lexsem.errors import DataError

TASK = {"kind": "tot", "item_id": "7", "subset": "swap_obj", "benchmark": "sugarcrepe_pp",
        "options": [{"id": "p1", "text": "A cat chases a dog."},
                    {"id": "p2", "text": "A dog is chased by a cat."},
                    {"id": "n", "text": "A dog chases a cat."}], "correct": "n"}  # fmt: skip


@pytest.fixture
def data(tmp_path: Path) -> dict[str, Any]:
    export_tasks([TASK], tmp_path / "ls", study="pilot", seed=5)
    body = json.loads((tmp_path / "ls" / "tot.tasks.json").read_text(encoding="utf-8"))
    return body[0]["data"]


def annotation(user: Any, choice: str = "1", **extra: Any) -> dict[str, Any]:
    """One annotation as Label Studio's JSON export writes it."""
    return {"id": 1001, "completed_by": user, "was_cancelled": False, "lead_time": 3.5,
            "created_at": "2025-03-09T22:16:08.728353Z",
            "result": [{"from_name": "choice", "to_name": "context", "type": "choices",
                        "value": {"choices": [choice]}}], **extra}  # fmt: skip


def write(tmp_path: Path, body: Any) -> Path:
    path = tmp_path / "export.json"
    path.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
    return path


def cli_import(path: Path, out: Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["annotate", "labelstudio-import", str(path), "-o", str(out)])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["annotations"][0].update(lead_time="abc"),
         r"task 1 \(id 6\): annotations\.1\.lead_time is 'abc': Input should be a valid number"),
        (lambda t: t["annotations"][0].update(lead_time=-2),
         r"annotations\.1\.lead_time is -2: Input should be greater than or equal to 0"),
        (lambda t: t["data"].update(seed="x"),
         r"task 1 \(id 6\): data\.seed is 'x': Input should be a valid integer"),
        (lambda t: t["data"].update(seed=10**30),
         r"data\.seed is 1000000000000000000000000000000: Input should be less than or equal"),
        (lambda t: t["data"].update(options=5),
         r"task 1 \(id 6\): data\.options is 5: Input should be a valid list"),
        (lambda t: t["data"].update(practice="yes"),
         r"data\.practice is 'yes': Input should be a valid boolean"),
        (lambda t: t.update(annotations={"0": t["annotations"][0]}),
         r"task 1 \(id 6\): annotations is dict: Input should be a valid list"),
        (lambda t: t["annotations"].__setitem__(0, [1, 2]),
         r"task 1 \(id 6\): annotations\.1 is list: Input should be a valid dictionary"),
    ],
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_one_line_naming_task_and_field(
    tmp_path: Path, data: dict[str, Any], change: Any, message: str
) -> None:
    task = {"id": 6, "data": data, "annotations": [annotation(10)]}
    change(task)
    path = write(tmp_path, [task])
    with pytest.raises(DataError, match=message):
        import_export(path)
    code, out = cli_import(path, tmp_path / "answers.parquet")
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "task 1" in out
    assert not (tmp_path / "answers.parquet").exists()


def test_two_annotations_of_one_task_by_one_annotator_are_flagged(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    task = {
        "id": 6,
        "data": data,
        "annotations": [annotation(10, id=1), annotation(11, id=2), annotation(10, "2", id=3)],
    }
    path = write(tmp_path, [task])  # fmt: skip
    with pytest.raises(DataError, match=r"task 1 \(id 6\): annotated twice by ls-10 \(annotat"
                                        r"ions 1 and 3\)"):  # fmt: skip
        import_export(path)
    task["annotations"] = task["annotations"][:2]
    assert import_export(write(tmp_path, [task])).num_rows == 2


def test_json_min_and_csv_exports_are_named_with_the_format_to_use(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    json_min = [{**data, "id": 6, "choice": "1", "annotator": 10, "annotation_id": 1001,
                 "created_at": "2025-03-09T22:16:08Z", "lead_time": 3.5}]  # fmt: skip
    with pytest.raises(DataError, match=r"JSON_MIN export.*export the project as \"JSON\""):
        import_export(write(tmp_path, json_min))
    csv = "id,item_id,kind,choice,annotator\n6,7,tot,1,10\n"
    with pytest.raises(DataError, match=r"CSV/TSV export.*export the project as \"JSON\""):
        import_export(write(tmp_path, csv))
    with pytest.raises(DataError, match="not a Label Studio JSON export"):
        import_export(write(tmp_path, "{"))


def test_a_label_studio_skip_is_recorded_as_a_skip(tmp_path: Path, data: dict[str, Any]) -> None:
    skipped = annotation(11, was_cancelled=True, result=[])
    task = {"id": 6, "data": data, "annotations": [annotation(10), skipped]}
    rows = import_export(write(tmp_path, [task])).to_pylist()
    assert [(r["annotator"], r["answer"], r["correct"]) for r in rows] == [
        ("ls-10", data["options"][0], data["options"][0] == "n"),
        ("ls-11", "skip", False),
    ]
    assert rows[1]["seconds"] == 3.5

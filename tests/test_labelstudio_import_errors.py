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

from builders.annotate_studies import make_study
from lexsem.annotate.labelstudio import KEY_FILE, ExportKey, read_key
from lexsem.annotate.labelstudio_export import export_study
from lexsem.annotate.labelstudio_import import import_exports
from lexsem.cli import app
from lexsem.errors import DataError


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The data of one TOT task of a one-item study, and the export's key file."""
    folder = tmp_path_factory.mktemp("ls")
    made = make_study(folder, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "tot",
                      name="pilot")  # fmt: skip
    export_study(made.path, folder / "ls")
    body = json.loads((folder / "ls" / "tot" / "tasks.json").read_text(encoding="utf-8"))
    return body[0]["data"], folder / "ls" / KEY_FILE


@pytest.fixture
def data(exported: tuple[dict[str, Any], Path]) -> dict[str, Any]:
    return json.loads(json.dumps(exported[0]))


@pytest.fixture
def key(exported: tuple[dict[str, Any], Path]) -> ExportKey:
    return read_key(exported[1])


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


def cli_import(path: Path, key: Path, out: Path) -> tuple[int, str]:
    res = CliRunner().invoke(
        app, ["annotate", "labelstudio-import", str(path), "--key", str(key), "-o", str(out)]
    )
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["annotations"][0].update(lead_time="abc"),
         r"task 1 \(id 6\): annotations\.1\.lead_time is 'abc': Input should be a valid number"),
        (lambda t: t["annotations"][0].update(lead_time=-2),
         r"annotations\.1\.lead_time is -2: Input should be greater than or equal to 0"),
        (lambda t: t["annotations"][0].update(was_cancelled="no"),
         r"annotations\.1\.was_cancelled is 'no': Input should be a valid boolean"),
        (lambda t: t["data"].update(lexsem_task=5),
         r"task 1 \(id 6\): data\.lexsem_task is 5: Input should be a valid string"),
        (lambda t: t["data"].update(lexsem_study=None),
         r"task 1 \(id 6\): data\.lexsem_study is None: Input should be a valid string"),
        (lambda t: t.update(annotations={"0": t["annotations"][0]}),
         r"task 1 \(id 6\): annotations is dict: Input should be a valid list"),
        (lambda t: t["annotations"].__setitem__(0, [1, 2]),
         r"task 1 \(id 6\): annotations\.1 is list: Input should be a valid dictionary"),
    ],
)  # fmt: skip
def test_a_field_of_the_wrong_type_is_one_line_naming_task_and_field(
    tmp_path: Path, data: dict[str, Any], exported: tuple[Any, Path], change: Any, message: str
) -> None:
    task = {"id": 6, "data": data, "annotations": [annotation(10)]}
    change(task)
    path = write(tmp_path, [task])
    with pytest.raises(DataError, match=message):
        import_exports([path], read_key(exported[1]))
    code, out = cli_import(path, exported[1], tmp_path / "answers.parquet")
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "task 1" in out
    assert not (tmp_path / "answers.parquet").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.update(seed="x"), r"tasks\.\w+\.seed: Input should be a valid integer"),
        (lambda t: t.update(seed=10**30), r"tasks\.\w+\.seed: Input should be less than or equal"),
        (lambda t: t.update(options=5), r"tasks\.\w+\.options: Input should be a valid list"),
        (lambda t: t.update(practice="yes"),
         r"tasks\.\w+\.practice: Input should be a valid boolean"),
    ],
)  # fmt: skip
def test_a_key_field_of_the_wrong_type_is_one_line_naming_it(
    tmp_path: Path, exported: tuple[Any, Path], change: Any, message: str
) -> None:
    body = json.loads(exported[1].read_text(encoding="utf-8"))
    change(next(iter(body["tasks"].values())))
    path = tmp_path / KEY_FILE
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_key(path)
    task = write(tmp_path, [{"id": 6, "data": exported[0], "annotations": [annotation(10)]}])
    code, out = cli_import(task, path, tmp_path / "answers.parquet")
    assert code == 2 and out.count("\n") == 1 and f"{path}: tasks." in out, out
    assert not (tmp_path / "answers.parquet").exists()


def test_two_annotations_of_one_task_by_one_annotator_are_flagged(
    tmp_path: Path, data: dict[str, Any], key: ExportKey
) -> None:
    task = {
        "id": 6,
        "data": data,
        "annotations": [annotation(10, id=1), annotation(11, id=2), annotation(10, "2", id=3)],
    }
    path = write(tmp_path, [task])  # fmt: skip
    with pytest.raises(DataError, match=r"task 1 \(id 6\): tot item \S+ annotated twice by "
                                        r"ls-10 \(.*annotation 1; .*annotation 3\)"):  # fmt: skip
        import_exports([path], key)
    task["annotations"] = task["annotations"][:2]
    assert import_exports([write(tmp_path, [task])], key).num_rows == 2


def test_json_min_and_csv_exports_are_named_with_the_format_to_use(
    tmp_path: Path, data: dict[str, Any], key: ExportKey
) -> None:
    json_min = [{**data, "id": 6, "choice": "1", "annotator": 10, "annotation_id": 1001,
                 "created_at": "2025-03-09T22:16:08Z", "lead_time": 3.5}]  # fmt: skip
    with pytest.raises(DataError, match=r"JSON_MIN export.*export the project as \"JSON\""):
        import_exports([write(tmp_path, json_min)], key)
    csv = "annotation_id,annotator,choice,context,id,lexsem_study,lexsem_task,option1\n" \
          "1001,10,1,,6,pilot,abc,A cat\n"  # fmt: skip
    with pytest.raises(DataError, match=r"CSV/TSV export.*export the project as \"JSON\""):
        import_exports([write(tmp_path, csv)], key)
    tsv = csv.replace(",", "\t")
    with pytest.raises(DataError, match=r"CSV/TSV export"):
        import_exports([write(tmp_path, tsv)], key)
    with pytest.raises(DataError, match="not a Label Studio JSON export"):
        import_exports([write(tmp_path, "{")], key)


def test_a_label_studio_skip_is_recorded_as_a_skip(
    tmp_path: Path, data: dict[str, Any], key: ExportKey
) -> None:
    skipped = annotation(11, was_cancelled=True, result=[])
    task = {"id": 6, "data": data, "annotations": [annotation(10), skipped]}
    rows = import_exports([write(tmp_path, [task])], key).to_pylist()
    first = key.tasks[data["lexsem_task"]].options[0]
    assert [(r["annotator"], r["answer"], r["correct"]) for r in rows] == [
        ("ls-10", first, first == "n"),
        ("ls-11", "skip", False),
    ]
    assert rows[1]["seconds"] == 3.5

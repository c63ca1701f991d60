"""Label Studio interop (`lexsem.annotate.labelstudio`): tasks JSON and labelling configs per
kind, and a hand-written export in Label Studio's documented JSON format ("Label Studio JSON
format of annotated tasks": tasks with `data` and `annotations`, each annotation's `result`
with `from_name` / `to_name` / `type` / `value`, `completed_by`, `lead_time`, `created_at`,
`was_cancelled`) read back into the answers table."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from lexsem.annotate.labelstudio import TaskItem, export_tasks, import_export
from lexsem.errors import DataError
from lexsem.results.answers_table import ANSWERS_SCHEMA

TASKS: list[dict[str, Any]] = [
    {"kind": "tot", "item_id": "7", "subset": "swap_obj", "benchmark": "sugarcrepe_pp",
     "options": [{"id": "p1", "text": "A cat chases a dog."},
                 {"id": "p2", "text": "A dog is chased by a cat."},
                 {"id": "n", "text": "A dog chases a cat."}], "correct": "n"},
    {"kind": "bivlc_t2i", "item_id": "3#caption0", "subset": "replace_obj", "benchmark": "bivlc",
     "base_text": "A red car.", "options": [{"id": "image0", "image": "/data/i0.png"},
                                             {"id": "image1", "image": "/data/i1.png"}],
     "correct": "image0"},
    {"kind": "validate", "item_id": "coco:12", "subset": "all", "benchmark": "build:out",
     "context": [["Original caption", "A man rides a horse."],
                 ["Generated second positive", "A horse is ridden by man."]],
     "edit_text": "A horse is ridden by man."},
    {"kind": "tot", "item_id": "p1", "subset": "swap_obj", "benchmark": "sugarcrepe_pp",
     "practice": True, "options": [{"id": "p1", "text": "a"}, {"id": "p2", "text": "b"},
                                   {"id": "n", "text": "c"}], "correct": "n"},
]  # fmt: skip


def _exported(tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    files = export_tasks(TASKS, tmp_path / "ls", study="pilot", seed=5)
    assert sorted(p.name for p in files) == sorted(
        f"{k}.{x}" for k in ("tot", "bivlc_t2i", "validate") for x in ("tasks.json", "config.xml")
    )
    return {
        k: json.loads((tmp_path / "ls" / f"{k}.tasks.json").read_text(encoding="utf-8"))
        for k in ("tot", "bivlc_t2i", "validate")
    }


def test_tasks_and_configs_per_kind(tmp_path: Path) -> None:
    tasks = _exported(tmp_path)
    tot = tasks["tot"][0]["data"]
    assert sorted(tot["options"]) == ["n", "p1", "p2"]
    texts = {o["id"]: o["text"] for o in TASKS[0]["options"]}
    assert [tot[f"option{k}"] for k in (1, 2, 3)] == [texts[i] for i in tot["options"]]
    assert tot["correct"] == "n" and tot["lexsem_study"] == "pilot"
    again = json.loads(json.dumps(_exported(tmp_path / "again")))
    assert again["tot"][0]["data"]["options"] == tot["options"]  # the order is seeded
    assert tasks["bivlc_t2i"][0]["data"]["option1"].startswith("/data/i")
    for kind, n_choices in (("tot", 3), ("bivlc_t2i", 2), ("validate", 3)):
        root = ET.fromstring((tmp_path / "ls" / f"{kind}.config.xml").read_text(encoding="utf-8"))
        choices = root.find("Choices")
        assert choices is not None and choices.get("name") == "choice"
        names = {el.get("name") for el in root.iter() if el.get("name")}
        assert choices.get("toName") in names  # Label Studio needs the object it labels
        assert len(choices.findall("Choice")) == n_choices
    validate = ET.fromstring((tmp_path / "ls" / "validate.config.xml").read_text("utf-8"))
    assert [c.get("value") for c in validate.iter("Choice")] == ["accept", "edit", "reject"]
    assert validate.find("TextArea") is not None
    t2i = ET.fromstring((tmp_path / "ls" / "bivlc_t2i.config.xml").read_text("utf-8"))
    assert [i.get("value") for i in t2i.iter("Image")] == ["$option1", "$option2"]


def test_bad_tasks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"task 1: kind: Input should be"):
        export_tasks([{"kind": "quiz", "item_id": "1"}], tmp_path, study="s")
    with pytest.raises(DataError, match="no tasks"):
        export_tasks([], tmp_path, study="s")
    assert TaskItem(kind="tot", item_id="1").options == []


def _annotation(user: Any, choice: str, *, edit: str | None = None, **extra: Any) -> dict:
    result = [{"id": "r1", "from_name": "choice", "to_name": "context", "type": "choices",
               "origin": "manual", "value": {"choices": [choice]}}]  # fmt: skip
    if edit is not None:
        result.append({"id": "r2", "from_name": "edit", "to_name": "context",
                       "type": "textarea", "value": {"text": [edit]}})  # fmt: skip
    return {"id": 1001, "result": result, "was_cancelled": False, "ground_truth": False,
            "created_at": "2025-03-09T22:16:08.728353Z", "updated_at": "2025-03-09T22:16:08Z",
            "lead_time": 4.288, "result_count": 0, "task": 1, "completed_by": user,
            **extra}  # fmt: skip


def test_a_label_studio_export_becomes_the_answers_table(tmp_path: Path) -> None:
    tasks = _exported(tmp_path)
    tot, t2i, val = (tasks[k][0] for k in ("tot", "bivlc_t2i", "validate"))
    n_pos = str(tot["data"]["options"].index("n") + 1)
    wrong = str(tot["data"]["options"].index("p1") + 1)
    img1 = str(t2i["data"]["options"].index("image1") + 1)
    export = [
        {"id": 1, "data": tot["data"], "project": 83, "predictions": [],
         "annotations": [_annotation(10, n_pos), _annotation({"id": 11, "email": "x@y.z"}, wrong),
                         _annotation(12, n_pos, was_cancelled=True)]},
        {"id": 2, "data": t2i["data"], "annotations": [_annotation(10, img1)]},
        {"id": 3, "data": val["data"],
         "annotations": [_annotation(10, "edit", edit="A horse is ridden by a man."),
                         _annotation(11, "accept")]},
    ]  # fmt: skip
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    answers = import_export(path)
    assert answers.schema == ANSWERS_SCHEMA
    rows = answers.to_pylist()
    assert [(r["kind"], r["annotator"], r["answer"], r["correct"]) for r in rows] == [
        ("tot", "ls-10", "n", True),
        ("tot", "ls-11", "p1", False),  # the e-mail is never read
        ("tot", "ls-12", "skip", False),  # a cancelled annotation is Label Studio's skip
        ("bivlc_t2i", "ls-10", "image1", False),
        ("validate", "ls-10", "edit", None),
        ("validate", "ls-11", "accept", None),
    ]
    assert rows[4]["edit"] == "A horse is ridden by a man." and rows[5]["edit"] is None
    assert rows[0]["seconds"] == 4.288 and rows[0]["study"] == "pilot"
    assert rows[0]["options"] == tot["data"]["options"] and rows[3]["item_id"] == "3#caption0"
    assert "x@y.z" not in json.dumps(rows)
    assert import_export(path, study="renamed").column("study").to_pylist()[0] == "renamed"


def test_unreadable_exports_name_the_task(tmp_path: Path) -> None:
    tasks = _exported(tmp_path)
    data = tasks["tot"][0]["data"]
    path = tmp_path / "e.json"
    for body, message in (
        ({"tasks": []}, "is a list of tasks"),
        ([{"id": 5, "data": {"text": "x"}}], r"task 1 \(id 5\): no lexsem task data"),
        ([{"id": 6, "data": data, "annotations": [_annotation(1, "9")]}],
         r"task 1 \(id 6\): choice '9' is not one of the task's"),
        ([{"id": 7, "data": data, "annotations": [_annotation(None, "1")]}],
         "without its annotator"),
    ):  # fmt: skip
        path.write_text(json.dumps(body), encoding="utf-8")
        with pytest.raises(DataError, match=message):
            import_export(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(DataError, match="not a Label Studio JSON export"):
        import_export(path)

"""`lexsem annotate labelstudio-export STUDY` and `labelstudio-import EXPORT... --key KEY`: a
study becomes one Label Studio project per kind (BiVLC: i2t and t2i), with its images, the
project settings its overlap needs, and a key that stays home; exports shaped as Label Studio
writes them ("Label Studio JSON format of annotated tasks": numeric `completed_by`, `to_name`
naming the labelled object of the kind's config, `was_cancelled` for a skip) come back as one
answers table whose counts equal hand counts."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.annotate_studies import make_study
from builders.labelstudio_exports import annotation, shown_position
from lexsem.annotate import store
from lexsem.annotate.labelstudio import KEY_FILE, read_key
from lexsem.annotate.labelstudio_export import export_study
from lexsem.annotate.labelstudio_import import import_exports
from lexsem.cli import app
from lexsem.errors import DataError, LexsemError
from lexsem.results.answers_table import ANSWERS_SCHEMA

DATA_KEYS = {"lexsem_study", "lexsem_task", "context", "base_text", "base_image", "edit_text"}


def cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["annotate", *args])
    return res.exit_code, res.output


@pytest.fixture
def bivlc(tmp_path: Path) -> tuple[Path, Path]:
    """A BiVLC study (2 instances, 1 practice, 1 gold, overlap 2) and its export folder."""
    made = make_study(tmp_path, "-b", "synthetic_bi/replace_obj", "--sample", "2", "--practice",
                      "1", "--gold", "1", "--overlap", "2", "-k", "bivlc_i2t", "-k", "bivlc_t2i",
                      name="bi")  # fmt: skip
    code, out = cli("labelstudio-export", str(made.path), "-o", str(tmp_path / "ls"))
    assert code == 0, out
    return made.path, tmp_path / "ls"


def _tasks(folder: Path, project: str) -> list[dict[str, Any]]:
    return json.loads((folder / project / "tasks.json").read_text(encoding="utf-8"))


def test_a_bivlc_study_becomes_two_projects_with_its_overlap(bivlc: tuple[Path, Path]) -> None:
    study, out = bivlc
    con = store.connect(study)
    units = store.units(con)
    con.close()
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "i2t", "images", KEY_FILE,
                                                     "t2i"]  # fmt: skip
    key = read_key(out / KEY_FILE)
    for project, kind in (("i2t", "bivlc_i2t"), ("t2i", "bivlc_t2i")):
        mine = [u for u in units if u.kind == kind]
        tasks = _tasks(out, project)
        assert len(tasks) == len(mine) == 2 * 4  # (2 main + practice + gold) x 2 queries each
        assert {key.tasks[t["data"]["lexsem_task"]].item_id for t in tasks} == {
            u.item_id for u in mine
        }
        first = key.tasks[tasks[0]["data"]["lexsem_task"]]
        assert first.practice  # practice is served first
        settings = json.loads((out / project / "project.json").read_text(encoding="utf-8"))
        assert settings["maximum_annotations"] == 2 and settings["overlap_cohort_percentage"] == 100
        assert settings["show_skip_button"] and settings["skip_queue"] == "IGNORE_SKIPPED"
        config = (out / project / "config.xml").read_text(encoding="utf-8")
        assert settings["label_config"] == config
        root = ET.fromstring(config)
        choices = root.find("Choices")
        assert choices is not None and choices.get("toName") == "base"
        assert [c.get("value") for c in choices.iter("Choice")] == ["1", "2"]
        base = root.find("*[@name='base']")
        assert base is not None and base.tag == ("Image" if project == "i2t" else "Text")
        storage = json.loads((out / project / "storage.json").read_text(encoding="utf-8"))
        assert storage["path"] == str((out / "images").resolve())
    for image in (out / "images").iterdir():  # the study's images, named by their sha256
        assert image.name.split(".")[0] == hashlib.sha256(image.read_bytes()).hexdigest()
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert f"LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT={out.resolve()}" in readme
    assert "labelstudio-import i2t-export.json t2i-export.json --key" in readme


def test_a_text_only_study_says_nothing_of_serving_images(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "2", "-k", "tot",
                      name="texts")  # fmt: skip
    for local in (True, False):
        out = tmp_path / f"ls-{local}"
        args = [] if local else ["--image-url", "https://example.org/images/"]
        code, said = cli("labelstudio-export", str(made.path), "-o", str(out), *args)
        assert code == 0, said
        assert not (out / "images").exists()
        readme = (out / "README.md").read_text(encoding="utf-8")
        assert "images/" not in readme and "Import the tasks" in readme
        assert "1. For each project folder" in readme and "2. Import the tasks" in readme


def test_no_task_names_an_option_role_or_the_item(bivlc: tuple[Path, Path]) -> None:
    _, out = bivlc
    key = read_key(out / KEY_FILE)
    positions = Counter()
    for project in ("i2t", "t2i"):
        for task in _tasks(out, project):
            data = task["data"]
            assert set(task) == {"data"}
            assert set(data) == DATA_KEYS | {"option1", "option2"}
            info = key.tasks[data["lexsem_task"]]
            text = json.dumps(data)
            for secret in (info.item_id, *info.options, '"correct"', "practice", "gold"):
                assert secret not in text, (secret, data)
            for k in (1, 2):
                assert data[f"option{k}"]  # each shown option: a caption or an image URL
            positions[info.options.index(info.correct or "")] += 1
    assert set(positions) == {0, 1}  # the right option is not always in one place


def test_exports_of_both_projects_are_one_answers_table(bivlc: tuple[Path, Path]) -> None:
    """Two annotators answer every task of both projects, one of them all wrong; a third
    skips one task: the table's accuracies are the hand counts."""
    study, out = bivlc
    key = read_key(out / KEY_FILE)
    con = store.connect(study)
    by_item = {(u.kind, u.item_id): u for u in store.units(con)}
    con.close()
    exports = []
    right = wrong = skips = 0
    for n, project in enumerate(("i2t", "t2i")):
        body = []
        for t, task in enumerate(_tasks(out, project), 1):
            info = key.tasks[task["data"]["lexsem_task"]]
            unit = by_item[info.kind, info.item_id]
            good = shown_position(task["data"], unit, unit.correct)
            bad = 3 - good
            anns = [annotation(10, str(good), to_name="base", id=100 * t),
                    annotation(11, str(bad), to_name="base", id=100 * t + 1)]  # fmt: skip
            right, wrong = right + 1, wrong + 1
            if n == 0 and t == 1:
                anns.append(annotation(12, "", to_name="base", id=7, was_cancelled=True,
                                       result=[]))  # fmt: skip
                skips += 1
            body.append({"id": 1000 * n + t, "data": task["data"], "annotations": anns,
                         "project": 5 + n})  # fmt: skip
        path = out.parent / f"{project}-export.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        exports.append(path)
    table = import_exports(exports, key)
    assert table.schema == ANSWERS_SCHEMA
    rows = table.to_pylist()
    assert len(rows) == right + wrong + skips
    assert sum(r["correct"] is True for r in rows) == right
    assert [r["annotator"] for r in rows if r["answer"] == "skip"] == ["ls-12"]
    assert {r["kind"] for r in rows} == {"bivlc_i2t", "bivlc_t2i"}
    assert all(r["correct"] for r in rows if r["annotator"] == "ls-10")
    assert not any(r["correct"] for r in rows if r["annotator"] == "ls-11")
    assert {r["study"] for r in rows} == {"bi"}
    answers = out.parent / "answers.parquet"
    code, said = cli("labelstudio-import", *map(str, exports), "--key", str(out / KEY_FILE),
                     "-o", str(answers))  # fmt: skip
    assert code == 0 and said.strip() == f"{len(rows)} answers -> {answers}", said
    code, said = cli("agreement", str(answers))
    assert code == 0, said


def test_one_task_in_two_exports_answered_twice_by_one_user_is_flagged(
    bivlc: tuple[Path, Path],
) -> None:
    _, out = bivlc
    key = read_key(out / KEY_FILE)
    task = _tasks(out, "i2t")[2]
    paths = []
    for n in (1, 2):
        path = out.parent / f"e{n}.json"
        path.write_text(json.dumps([{"id": 9, "data": task["data"],
                                     "annotations": [annotation(10, "1", id=n)]}]))  # fmt: skip
        paths.append(path)
    with pytest.raises(DataError, match=r"e2\.json: task 1 \(id 9\): bivlc_i2t item .* "
                                        r"annotated twice by ls-10 \(.*e1\.json"):  # fmt: skip
        import_exports(paths, key)
    assert import_exports(paths[:1], key).num_rows == 1


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, bivlc: tuple[Path, Path]) -> None:
    study, out = bivlc
    for args, message in (
        (["labelstudio-export", str(tmp_path / "none.sqlite"), "-o", str(tmp_path / "x")],
         "no such study"),
        (["labelstudio-export", str(study), "-o", str(out)], "exists and is not an empty folder"),
        (["labelstudio-import", str(tmp_path / "e.json"), "--key", str(tmp_path / "k.json"),
          "-o", str(tmp_path / "a.parquet")], "no such key file"),
    ):  # fmt: skip
        code, said = cli(*args)
        assert code == 2 and said.count("\n") == 1 and message in said, said
    assert not (tmp_path / "x").exists() and not (tmp_path / "a.parquet").exists()
    other = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "tot",
                       name="other")  # fmt: skip
    export_study(other.path, tmp_path / "ls-other")
    wrong_key = read_key(tmp_path / "ls-other" / KEY_FILE)
    path = tmp_path / "e.json"
    path.write_text(json.dumps([{"id": 3, "data": _tasks(out, "i2t")[0]["data"]}]))
    with pytest.raises(DataError, match=r"task 1 \(id 3\): task \w+ of study 'bi' is not in "
                                        r"the key"):  # fmt: skip
        import_exports([path], wrong_key)
    with pytest.raises(LexsemError, match="--image-url"):
        export_study(study, tmp_path / "y", image_url=" ")
    (tmp_path / "k.json").write_text('{"format": "lexsem-labelstudio-key/1", "study": 5}')
    with pytest.raises(DataError, match=r"k\.json: study: Input should be a valid string"):
        read_key(tmp_path / "k.json")

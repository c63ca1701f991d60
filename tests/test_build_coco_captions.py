"""The input source `coco_captions` (`lexsem.construct.coco_captions`): a COCO captions file read
as BiVLC's TROHN-Text script reads it, one row per caption; bad files named with the item."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builders.coco_captions_file import ANNOTATIONS, coco_payload, write_coco_captions
from lexsem.construct.catalog import SOURCES
from lexsem.construct.coco_captions import coco_captions, coco_captions_source
from lexsem.construct.inputs import file_sha256
from lexsem.errors import DataError


def _reference_rows(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """BiVLC's TROHN_Text_generation.py reading, transcribed: '%012d.jpg' % image_id, the
    caption stripped, then its line breaks made spaces."""
    return [
        (f"{a['image_id']:012d}.jpg", a["caption"].strip().replace("\n", " "))
        for a in payload["annotations"]
    ]


def test_rows_are_the_reference_reading(tmp_path: Path) -> None:
    path = write_coco_captions(tmp_path)
    rows = coco_captions(path, images=tmp_path / "train2017").to_pylist()
    want = _reference_rows(coco_payload())
    assert [(r["image"].split(":", 1)[1], r["caption"]) for r in rows] == want
    assert [r["image"].split(":", 1)[0] for r in rows] == ["train2017"] * len(want)
    assert [r["source_id"] for r in rows] == [str(a) for a, _, _ in ANNOTATIONS]
    assert [r["image_id"] for r in rows] == [i for _, i, _ in ANNOTATIONS]
    assert {r["source"] for r in rows} == {"coco"}
    assert rows[2]["caption"] == "Two cats sleeping in the sun"
    assert all(Path(r["image_path"]).is_file() for r in rows)


def test_the_registered_source_records_the_file_sha256(tmp_path: Path) -> None:
    path = write_coco_captions(tmp_path, images=False)
    table = SOURCES.get("coco_captions")(path=str(path), limit=2, root="coco2017")
    assert table is not None and table.sha256 == file_sha256(path)
    assert table.rows.num_rows == 2 and "image_path" not in table.rows.column_names
    assert table.rows["image"].to_pylist()[0] == "coco2017:000000000009.jpg"
    assert coco_captions_source(str(path)).rows.num_rows == len(ANNOTATIONS)


def test_without_an_images_list_the_names_are_the_scripts(tmp_path: Path) -> None:
    payload = coco_payload()
    del payload["images"]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(payload))
    assert coco_captions(path)["image"].to_pylist()[0] == "train2017:000000000009.jpg"


def _bad(tmp_path: Path, mutate: Any) -> Path:
    payload = coco_payload()
    mutate(payload)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: p["annotations"][3].update(caption=7), r"annotations\[3\]: 'caption' must"),
        (lambda p: p["annotations"][1].update(caption=" \n"), r"annotations\[1\]: 'caption' is"),
        (lambda p: p["annotations"][2].update(image_id=999), r"annotations\[2\]: 'image_id' 999"),
        (lambda p: p["annotations"][0].update(image_id="9"), r"annotations\[0\]: 'image_id' must"),
        (lambda p: p["annotations"][4].update(id=101), r"annotations\[4\]: annotation id 101"),
        (lambda p: p["images"][1].update(file_name="../x.jpg"), r"images\[1\]: unusable"),
        (lambda p: p["images"].append(dict(p["images"][0])), r"images\[5\]: image id 9 appears"),
        (lambda p: p.pop("annotations"), "expected a list 'annotations'"),
        (lambda p: p.update(annotations=[]), "no annotations"),
        (lambda p: p["annotations"].__setitem__(5, "x"), r"annotations\[5\]: an annotation"),
    ],
)
def test_bad_files_are_named_with_the_item(tmp_path: Path, mutate: Any, message: str) -> None:
    path = _bad(tmp_path, mutate)
    with pytest.raises(DataError, match=message) as err:
        coco_captions(path)
    assert str(path) in str(err.value)


def test_unreadable_files_and_missing_images(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text('{"annotations": [')
    # captions as JSON Lines (the other recipes' input) given where COCO's one JSON is read
    (tmp_path / "lines.jsonl").write_text('{"caption": "A dog."}\n{"caption": "A cat."}\n')
    for name, message in (
        ("list.json", "expected a JSON object"),
        ("broken.json", "malformed JSON"),
        ("lines.jsonl", r"lines\.jsonl:2: one JSON document expected, .* a JSON Lines file"),
        ("absent.json", "cannot read"),
    ):
        with pytest.raises(DataError, match=message) as err:
            coco_captions(tmp_path / name)
        assert name in str(err.value)
    path = write_coco_captions(tmp_path / "c")
    (tmp_path / "c" / "train2017" / "000000000030.jpg").unlink()
    with pytest.raises(DataError, match=r"annotations\[3\]: image '000000000030.jpg' is not"):
        coco_captions(path, images=tmp_path / "c" / "train2017")
    with pytest.raises(DataError, match="images folder does not exist"):
        coco_captions(path, images=tmp_path / "nowhere")
    with pytest.raises(DataError, match="root must be"):
        coco_captions(path, root="Train 2017")
    with pytest.raises(DataError, match="limit must be"):
        coco_captions(path, limit=0)

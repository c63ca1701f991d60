"""The training manifest's rows as a whole (`lexsem.train.manifest.read_manifest`): every row's
missing required fields reported in one error, rows that repeat an earlier row warned about and
counted, and the digest of the images (`images_sha256`) that tells a resumed run its images
changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from lexsem.errors import DataError, DataWarning
from lexsem.images.image_store import ImageStore
from lexsem.train.manifest import read_manifest


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "images").mkdir()
    for name, colour in (("a", "red"), ("b", "blue")):
        Image.new("RGB", (8, 8), colour).save(tmp_path / "images" / f"{name}.png")
    return tmp_path


def _store(folder: Path) -> ImageStore:
    return ImageStore(cache_root=folder / "cache")


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


A = {"image": "manifest:images/a.png", "caption": "a red square"}
B = {"image": "manifest:images/b.png", "caption": "a blue square"}


def test_every_missing_field_of_every_row_is_in_one_error(folder: Path) -> None:
    path = _write(folder / "m.jsonl", [A, {"negatives": []}, B, {"caption": "x"}, {"image": "i"}])
    with pytest.raises(DataError) as err:
        read_manifest(path, _store(folder))
    message = str(err.value)
    assert message.startswith(f"{path}:2: missing fields 'image', 'caption'"), message
    assert "2 more row(s) lacking required fields, at line 4, 5" in message
    assert "\n" not in message


def test_missing_parquet_columns_are_named_at_once(folder: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "m.parquet"
    pq.write_table(pa.table({"negatives": [["x"]]}), path)
    with pytest.raises(DataError, match=r"m\.parquet: missing column\(s\) 'image', 'caption'"):
        read_manifest(path, _store(folder))


def test_repeated_rows_are_warned_about_and_counted(folder: Path) -> None:
    path = _write(folder / "m.jsonl", [A, B, A, {**A, "negatives": ["a blue square"]}, B])
    with pytest.warns(DataWarning, match=r"2 row\(s\) repeat an earlier row in every field "
                      r"\(first: line 3 repeats line 1\)"):  # fmt: skip
        manifest = read_manifest(path, _store(folder))
    assert len(manifest.examples) == 5 and manifest.duplicates == 2
    assert manifest.describe()["duplicates"] == 2


def test_distinct_rows_are_not_warned_about(folder: Path) -> None:
    import warnings

    path = _write(folder / "m.jsonl", [A, B, {**A, "caption": "a square"}])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        assert read_manifest(path, _store(folder)).duplicates == 0


def test_the_images_digest_follows_the_images_bytes(folder: Path) -> None:
    path = _write(folder / "m.jsonl", [A, B])
    first = read_manifest(path, _store(folder)).images_sha256
    assert first is not None and first == read_manifest(path, _store(folder)).images_sha256
    Image.new("RGB", (8, 8), "green").save(folder / "images" / "b.png")
    assert read_manifest(path, _store(folder)).images_sha256 != first
    assert read_manifest(path, _store(folder), check_images=False).images_sha256 is None


def test_an_empty_manifest_names_the_file(folder: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "empty.parquet").write_bytes(b"")
    with pytest.raises(DataError, match=r"empty\.parquet: not a readable Parquet file"):
        read_manifest(folder / "empty.parquet", _store(folder))
    schema = pa.schema([("image", pa.string()), ("caption", pa.string())])
    pq.write_table(pa.table({"image": [], "caption": []}, schema=schema), folder / "none.parquet")
    with pytest.raises(DataError, match=r"none\.parquet: the manifest has no examples"):
        read_manifest(folder / "none.parquet", _store(folder))
    _write(folder / "blank.jsonl", [])
    with pytest.raises(DataError, match=r"blank\.jsonl: the manifest has no examples"):
        read_manifest(folder / "blank.jsonl", _store(folder))

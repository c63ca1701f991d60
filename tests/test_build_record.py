"""build.json is a versioned model (`lexsem.construct.build_record`): a record without a
version is version 1, a newer version is refused, and what the runner writes reads back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lexsem.construct.build_record import (
    BUILD_FILE,
    SCHEMA_VERSION,
    BuildRecord,
    StageRecord,
    read_build_record,
    write_build_record,
)
from lexsem.errors import LexsemError

STAGE = {
    "index": 1, "name": "caption_format", "use": "caption_format", "settings": {"k": 2},
    "settings_digest": "d" * 64, "input_sha256": "i" * 64,
    "output": "stages/01-caption_format.parquet", "output_sha256": "o" * 64, "rows": 5,
    "accepted": 4, "rejected": {"empty caption": 1}, "counts": {}, "requests": {}, "seconds": 0.1,
}  # fmt: skip
UNVERSIONED = {  # a build.json as lexsem wrote it before the record had a version
    "generator": "lexsem", "kind": "build", "lexsem_version": "0.9.0", "complete": True,
    "recipe": {"name": "tiny", "path": "/r/tiny.toml", "sha256": "r" * 64},
    "input": {"described": "/r/captions.jsonl", "sha256": "s" * 64, "rows": 5},
    "model": {"spec": "openai:gpt-x@http://host/v1", "fingerprint": {"model": "gpt-x"}},
    "image_model": None, "seed": 0, "stages": [STAGE],
}  # fmt: skip


def _write(folder: Path, doc: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BUILD_FILE).write_text(json.dumps(doc), encoding="utf-8")
    return folder


def test_an_unversioned_record_is_version_1(tmp_path: Path) -> None:
    record = read_build_record(_write(tmp_path, UNVERSIONED))
    assert record is not None and record.schema_version == 1 == SCHEMA_VERSION
    assert record.stages[0] == StageRecord(**STAGE) and record.stages[0].reused is False
    assert record.model is not None and record.model.fingerprint == {"model": "gpt-x"}
    written = record.model_dump(mode="json")
    assert written == {**UNVERSIONED, "schema_version": 1}


def test_a_newer_version_is_refused_naming_the_file(tmp_path: Path) -> None:
    folder = _write(tmp_path, {**UNVERSIONED, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(LexsemError) as info:
        read_build_record(folder)
    message = str(info.value)
    assert message.startswith(f"{folder / BUILD_FILE}: build record schema version 2 is newer")
    assert "\n" not in message


@pytest.mark.parametrize("doc", ["{not json", "[1]", {**UNVERSIONED, "seed": "x"}, {}])
def test_a_damaged_record_reads_as_none(tmp_path: Path, doc: Any) -> None:
    tmp_path.joinpath(BUILD_FILE).write_text(doc if isinstance(doc, str) else json.dumps(doc))
    assert read_build_record(tmp_path) is None
    assert read_build_record(tmp_path / "absent") is None


def test_written_records_carry_the_version_and_read_back(tmp_path: Path) -> None:
    record = BuildRecord.model_validate(UNVERSIONED)
    record.stages[0] = record.stages[0].model_copy(update={"reused": True})
    write_build_record(tmp_path / "out", record)
    raw = json.loads((tmp_path / "out" / BUILD_FILE).read_text(encoding="utf-8"))
    assert raw["schema_version"] == SCHEMA_VERSION and "reused" not in raw["stages"][0]
    again = read_build_record(tmp_path / "out")
    assert again is not None and again.model_dump() == BuildRecord.model_validate(raw).model_dump()
    assert again.stages[0].reused is False

"""``DIR/build.json``: what a build did, as a versioned model (`BuildRecord`), written by the
runner after every stage and read back to resume a build and to write a frozen benchmark's
data card.

It records the lexsem version, whether the build finished, the recipe (name, path, sha256), the
input (what, sha256, rows), the generator and the image generator (spec without credentials,
fingerprint), the seed and one `StageRecord` per stage run or reused. A file without a
``schema_version`` is version 1; a version newer than `SCHEMA_VERSION` is refused with an error
naming the file (written by a newer lexsem: this one would misread or overwrite it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lexsem.atomic import atomic_open
from lexsem.errors import DataError, LexsemError
from lexsem.jsonl import read_json

__all__ = [
    "BUILD_FILE",
    "SCHEMA_VERSION",
    "BuildRecord",
    "GeneratorInfo",
    "StageRecord",
    "read_build_record",
    "write_build_record",
]

BUILD_FILE = "build.json"
SCHEMA_VERSION = 1


class StageRecord(BaseModel):
    """What build.json says of one stage: its settings and their digest, the sha256 of its
    input and of its output (a path relative to the build folder), rows, accepted and
    rejected rows per reason, the stage's own counts, requests and seconds. `reused` (not
    written): the stage was not run again."""

    model_config = ConfigDict(extra="forbid")

    index: int
    name: str
    use: str
    settings: dict[str, Any]
    settings_digest: str
    input_sha256: str
    output: str = ""
    output_sha256: str = ""
    rows: int = 0
    accepted: int = 0
    rejected: dict[str, int] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    requests: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0
    reused: bool = Field(default=False, exclude=True)


class RecipeInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    path: str
    sha256: str


class InputInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    described: str
    sha256: str
    rows: int


class GeneratorInfo(BaseModel):
    """A generator or image generator: its spec without credentials and its fingerprint."""

    model_config = ConfigDict(extra="forbid")

    spec: str
    fingerprint: dict[str, Any]


class BuildRecord(BaseModel):
    """The whole of build.json (see the module doc)."""

    model_config = ConfigDict(extra="forbid")

    generator: Literal["lexsem"] = "lexsem"
    kind: Literal["build"] = "build"
    schema_version: int = SCHEMA_VERSION
    lexsem_version: str
    complete: bool
    recipe: RecipeInfo
    input: InputInfo
    model: GeneratorInfo | None = None
    image_model: GeneratorInfo | None = None
    seed: int
    stages: list[StageRecord] = Field(default_factory=list)


def write_build_record(folder: Path, record: BuildRecord) -> None:
    """`record` as ``folder/build.json``, atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_open(folder / BUILD_FILE, encoding="utf-8") as fh:
        json.dump(record.model_dump(mode="json"), fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def read_build_record(folder: Path) -> BuildRecord | None:
    """``folder/build.json``; None where there is none or it is not a build record (damaged,
    half a file). A `LexsemError` where it was written by a newer lexsem (its
    ``schema_version`` is above `SCHEMA_VERSION`)."""
    file = folder / BUILD_FILE
    try:
        raw = read_json(file)
    except DataError:
        return None
    if not isinstance(raw, dict):
        return None
    version = raw.setdefault("schema_version", 1)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise LexsemError(
            f"{file}: build record schema version {version} is newer than this lexsem reads "
            f"(version {SCHEMA_VERSION}); upgrade lexsem, or build into another folder"
        )
    try:
        return BuildRecord.model_validate(raw)
    except ValidationError:
        return None

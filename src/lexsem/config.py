"""`EvalConfig`: one object for what an evaluation runs and how, shared by the CLI, the Python
API, sweeps and the run record. It is plain data (validated by pydantic): it pickles, and a
copy sent to another process runs there the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lexsem.images.memory import DEFAULT_DECODED_IMAGE_MB
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS

TiePolicyName = Literal["strict", "lenient"]


class EvalConfig(BaseModel):
    """What to evaluate and how; every field has the CLI's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmarks: tuple[str, ...] = Field(min_length=1)  # NAME, NAME/SUBSET[,...] or FORMAT:PATH
    tasks: tuple[str, ...] | None = None  # None: every task the model can run
    # the model's display name in run.json (`model.name`), tables and plots; None: its own name
    name: str | None = Field(None, min_length=1, max_length=500)
    # data and caches
    data_dir: Path | None = None
    cache_dir: Path | None = None
    use_cache: bool = True
    offline: bool | None = None
    # statistics
    tie_policy: TiePolicyName = "strict"
    seed: int = 0
    n_boot: int = Field(1000, ge=0)
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    # model execution
    batch_size: int = Field(64, ge=1)
    device: str | None = None
    dtype: str | None = None
    # images
    coco_val2017: Path | None = None
    coco_train2017: Path | None = None
    image_root: Path | None = None
    skip_bad_images: bool = False
    max_image_pixels: int = Field(DEFAULT_MAX_IMAGE_PIXELS, ge=1)  # larger images: ImageError
    exif_transpose: bool | None = None  # None: each benchmark's decode profile decides
    num_workers: int | None = Field(None, ge=0)
    # decoded images an Evaluator keeps in memory across its runs (MiB; 0: none), so that a
    # model evaluated again with new weights (every epoch of training) decodes no image twice
    keep_decoded_mb: int = Field(DEFAULT_DECODED_IMAGE_MB, ge=0)
    progress: bool = False
    # chat models (`lexsem.engine.chat`): k-shot demonstrations before each question (drawn
    # from the item's subset, seeded), sending nothing (every answer from the store), a cap on
    # the requests sent, and how many are sent at a time (at most the model's own limit)
    shots: int = Field(0, ge=0, le=64)
    shot_seed: int = 0
    replay_only: bool = False
    max_requests: int | None = Field(None, ge=0)
    concurrency: int = Field(4, ge=1, le=64)

    @field_validator("benchmarks", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("data_dir", "cache_dir", "coco_val2017", "coco_train2017", "image_root")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        """Folders are recorded absolute (`~` expanded): run.json says where the files were,
        whatever folder a later `report` is run from."""
        return Path(os.path.abspath(value.expanduser())) if value is not None else None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a model name must not be blank")
        return value.strip() if value is not None else None

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, value: object) -> object:
        if isinstance(value, str):
            return (value,)
        return tuple(value) if value else None  # type: ignore[call-overload]

    @field_validator("benchmarks")
    @classmethod
    def _no_duplicates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        names = [s.strip().partition("/")[0] for s in value]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(
                f"benchmark {dup[0]!r} given more than once; select several subsets as "
                f"{dup[0]}/SUBSET1,SUBSET2"
            )
        return value


def build_config(**fields: object) -> EvalConfig:
    """`EvalConfig(**fields)` with validation errors as one `LexsemError` naming each field."""
    from pydantic import ValidationError

    from lexsem.errors import LexsemError

    try:
        return EvalConfig(**fields)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise LexsemError(f"invalid evaluation settings: {problems}") from None

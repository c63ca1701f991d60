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

    benchmarks: tuple[str, ...] = Field(
        min_length=1,
        description="NAME, NAME/SUBSET[,SUBSET] or a file FORMAT:PATH (scpp:my.json).",
    )
    tasks: tuple[str, ...] | None = Field(
        None, description="Tasks to run, e.g. tot, t2t (default: every task the model can run)."
    )
    name: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="The model's name in run.json (`model.name`), tables and plots "
        "(default: the alias or spec).",
    )
    # data and caches
    data_dir: Path | None = Field(
        None,
        description="Offline folder holding the benchmark files (same names as downloads; "
        "make one with `lexsem download --to DIR`).",
    )
    cache_dir: Path | None = Field(
        None, description="Cache folder for downloads and embeddings (default: ~/.cache/lexsem)."
    )
    use_cache: bool = Field(True, description="Use the embedding cache.")
    offline: bool | None = Field(
        None,
        description="Never touch the network (default: $LEXSEM_OFFLINE or $HF_HUB_OFFLINE "
        "decides).",
    )
    # statistics
    tie_policy: TiePolicyName = Field("strict", description="strict or lenient.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Bootstrap seed.")
    n_boot: int = Field(1000, ge=0, le=100_000, description="Bootstrap resamples (0: none).")
    confidence: float = Field(
        0.95, gt=0.0, lt=1.0, description="Confidence level of the bootstrap intervals."
    )
    # model execution
    batch_size: int = Field(
        64, ge=1, le=65_536, description="Texts, images or pairs per model call."
    )
    device: str | None = Field(
        None,
        description="auto, cpu, cuda, cuda:N or mps (default: auto: cuda, else mps, else cpu).",
    )
    dtype: str | None = Field(
        None,
        description=(
            "auto, fp32, fp16 or bf16 (default: the spec's dtype option, else fp32 on a CPU and "
            "the GPU's bf16 or fp16 on CUDA; auto: the same, but bf16 on a CPU with native bf16)."
        ),
    )
    # images
    coco_val2017: Path | None = Field(None, description="COCO val2017 folder.")
    coco_train2017: Path | None = Field(None, description="COCO train2017 folder (VISLA spatial).")
    image_root: Path | None = Field(
        None, description="Base folder of downloaded images (default: <cache>/images)."
    )
    skip_bad_images: bool = Field(
        False,
        description="Skip (and record) items whose image is missing, undecodable or too large.",
    )
    max_image_pixels: int = Field(  # larger images: ImageError
        DEFAULT_MAX_IMAGE_PIXELS,
        ge=1,
        le=2**31,
        description="Refuse images with more pixels (width × height) than this; the "
        "benchmarks' images have a few megapixels at most.",
    )
    exif_transpose: bool | None = Field(
        None,
        description="Apply (or not) EXIF orientation for every benchmark (default: each "
        "benchmark's decode profile decides, as its reference does).",
    )
    num_workers: int | None = Field(
        None,
        ge=0,
        le=256,
        description="Image decoding workers (default: auto, from the CPUs, the device and the "
        "number of images).",
    )
    # so that a model evaluated again with new weights (every epoch of training) decodes no
    # image twice
    keep_decoded_mb: int = Field(
        DEFAULT_DECODED_IMAGE_MB,
        ge=0,
        le=1_048_576,
        description="Decoded images an Evaluator keeps in memory across its runs (MiB; 0: none).",
    )
    progress: bool = Field(
        False,
        description="Show progress on stderr: a bar on a terminal, a line every few seconds "
        "when piped.",
    )
    # chat models (`lexsem.engine.chat`)
    shots: int = Field(
        0,
        ge=0,
        le=64,
        description="Show K other items of the subset, answered rightly, before each question.",
    )
    shot_seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the demonstrations drawn.")
    replay_only: bool = Field(False, description="Send nothing: every answer from the store.")
    max_requests: int | None = Field(
        None, ge=0, description="Refuse to send more requests than this (default: no limit)."
    )
    concurrency: int = Field(
        4, ge=1, le=64, description="Requests at a time (at most the model's own limit)."
    )
    # multiple choice (`lexsem.tasks.answer_rules`)
    answer_rule: Literal["authors", "strict"] = Field(
        "authors",
        description="How multiple-choice answers are read: authors (each prompt's authors' "
        "rule; sc_gpt4v: exactly one of the markers (1)/(2), as SugarCrepe counted GPT-4V's "
        "answers) or strict (lexsem's parser for every prompt).",
    )

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

"""The settings of `lexsem annotate`'s commands as validated objects, each field with its
default, description and bounds, so that the CLI (`lexsem.cli.annotate`, whose options are
made from these fields) and the Python API cannot disagree: `StudySettings` (what a study is
and how it is run, stored in the study file), `CreateConfig` (the sizes a study is created
with, not stored), `ServeConfig` (the server) and `InviteConfig` (new annotator links)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_ANNOTATORS", "MAX_ITEMS", "MAX_TEXT", "CreateConfig", "InviteConfig",
           "ServeConfig", "StudySettings"]  # fmt: skip

#: The most annotators one command makes links for.
MAX_ANNOTATORS = 10_000
#: The longest instructions or consent text (characters).
MAX_TEXT = 100_000
#: The most items one study draws.
MAX_ITEMS = 100_000


class StudySettings(BaseModel):
    """What a study is and how it is run (stored in the study file as JSON, one key per
    field)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        min_length=1, max_length=200, description="The study's name (default: the file's name)."
    )
    kinds: tuple[str, ...] = Field(
        max_length=16, description="Task kind(s), in serving order (default: by item kind)."
    )
    benchmarks: tuple[str, ...] = Field(
        max_length=1000,
        description="Where the items come from: benchmark selections, or parquet:PATH.",
    )
    overlap: int = Field(1, ge=1, le=1000, description="Annotators per item.")
    quota: int | None = Field(
        None, ge=1, le=1_000_000, description="Items per annotator (default all)."
    )
    gold_pass: float = Field(
        0.8, ge=0.0, le=1.0, description="Flag annotators whose gold accuracy is below this."
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Sampling and randomisation seed.")
    completion_code: str = Field(
        "",
        max_length=200,
        description="The prefix of each participant's own completion code (crowd platforms).",
    )
    instructions: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_TEXT,
        description="The study's own instructions (default: the papers').",
    )
    consent: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_TEXT,
        description="The study's own consent text (default: lexsem's).",
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Anything else the study records."
    )
    code_min_answered: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="A completion code needs this share of the participant's real questions "
        "answered, not skipped.",
    )
    reservation_minutes: float = Field(
        30.0,
        gt=0.0,
        le=10_080.0,
        description="Minutes a participant may be idle before their unanswered items go back "
        "to the pool.",
    )
    max_participants: int | None = Field(
        None, ge=1, le=1_000_000, description="The most participants the join link admits."
    )
    link_hours: float | None = Field(
        None,
        gt=0.0,
        le=8_760.0,
        description="Hours a personal link works if its participant has not started "
        "(default: no expiry).",
    )
    join_batch: int = Field(
        5,
        ge=1,
        le=1000,
        description="Items a participant who came through the join link is given at a time; "
        "the next ones as they answer these, up to the quota.",
    )
    first_answer_minutes: float = Field(
        10.0,
        gt=0.0,
        le=10_080.0,
        description="Minutes a participant who has answered no question yet may hold their "
        "items before they go back to the pool.",
    )


class CreateConfig(BaseModel):
    """The sizes a study is created with: how many items are drawn, practice and gold items,
    personal links made at once (not stored: the study file holds what they made)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample: int | None = Field(
        None, ge=1, le=MAX_ITEMS, description="Items drawn per subset (default all)."
    )
    sample_total: int | None = Field(
        None, ge=1, le=MAX_ITEMS, description="Items drawn from the whole selection."
    )
    practice: int = Field(
        0, ge=0, le=1000, description="Practice items (served first to everyone, with feedback)."
    )
    gold: int = Field(0, ge=0, le=1000, description="Gold (attention) items, for everyone.")
    annotators: int = Field(0, ge=0, le=MAX_ANNOTATORS, description="Personal links to make now.")


class ServeConfig(BaseModel):
    """How a study is served."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field("127.0.0.1", max_length=255, description="Address to listen on.")
    port: int = Field(8000, ge=1, le=65535, description="Port.")
    rate_limit: int = Field(
        300, ge=1, le=100_000, description="Requests per token per minute (images included)."
    )
    access_log: bool = Field(
        False, description="Log each request to stderr (links' tokens redacted)."
    )
    reservation_minutes: float | None = Field(
        None,
        gt=0.0,
        le=10_080.0,
        description="Minutes a participant may be idle before their items go back to the pool "
        "(default: the study's setting).",
    )
    base_url: str | None = Field(
        None,
        max_length=2048,
        pattern=r"^https?://[^/?#\s]+/?$",
        description="The public address the study is served at behind a reverse proxy "
        "(https://NAME/): requests addressed to its host name are answered too.",
    )


class InviteConfig(BaseModel):
    """New personal annotator links for a study."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(1, ge=1, le=MAX_ANNOTATORS, description="How many links.")

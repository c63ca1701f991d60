"""`lexsem explore`'s settings with their bounds (the CLI's options are made from them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ExploreConfig"]


class ExploreConfig(BaseModel):
    """Where the page is served and how its intervals are computed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(
        "127.0.0.1", max_length=255,
        description="Address to listen on (0.0.0.0 or '::': every address, for other machines).",
    )  # fmt: skip
    port: int = Field(8765, ge=1, le=65535, description="Port.")
    n_boot: int = Field(
        1000, ge=0, le=100_000,
        description="Bootstrap resamples of each run's accuracy over a slice (0: no interval).",
    )  # fmt: skip

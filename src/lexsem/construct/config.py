"""`BuildConfig`: how `lexsem build` runs a recipe (what it may send, whether it starts
again), each field with its default, description and bounds. The options of `lexsem build`
are made from these fields (`lexsem.cli.options.config_option`) and they are
`lexsem.construct.runner.build`'s keyword arguments (`build(recipe, out,
**config.model_dump())`), so the CLI and the Python API cannot disagree
(`tests/test_cli_options.py`). The request budget is the one a chat evaluation has
(`EvalConfig.replay_only`, `EvalConfig.max_requests`), said in the same words."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lexsem.config import EvalConfig

__all__ = ["BuildConfig"]

_EVAL = EvalConfig.model_fields


class BuildConfig(BaseModel):
    """How a recipe is built; every field has the CLI's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replay_only: bool = Field(False, description=_EVAL["replay_only"].description)
    max_requests: int | None = Field(None, ge=0, description=_EVAL["max_requests"].description)
    force: bool = Field(
        False, description="Run every stage again; build in a folder that is not a build's."
    )

"""`ReproduceConfig`: which rows of a paper's table `lexsem reproduce` runs and how its sweep
runs (`SweepConfig`), each field with its default, description and bounds. The options of
`lexsem reproduce` are made from these fields and from the evaluation settings it passes on
(`EvalConfig`) by `lexsem.cli.options.config_option`, so the CLI and
`lexsem.reproduce.session.reproduce` cannot disagree (`tests/test_cli_options.py`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lexsem.sweep.config import SweepConfig

__all__ = ["ReproduceConfig"]


class ReproduceConfig(BaseModel):
    """Which rows run, and how; every field has the CLI's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    only_installed: bool = Field(
        False, description="Run only the rows whose weights are installed (always so offline)."
    )
    rows: tuple[str, ...] | None = Field(
        None,
        min_length=1,
        description="Only this row (the model's name as the paper prints it).",
    )
    force: bool = Field(
        False,
        description="Replace a comparison.md / comparison.csv in OUT that lexsem did not write.",
    )
    sweep: SweepConfig = Field(
        default_factory=SweepConfig, description="How the table's jobs run (lexsem sweep)."
    )

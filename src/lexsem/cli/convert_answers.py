"""`lexsem convert-answers`: a benchmark's published free-form answers, in its authors' own
layout, written as lexsem's recorded answers (`lexsem.models.answers_file`), to be scored by
`lexsem score-answers`. One format: SugarCrepe's GPT-4V answers (`sugarcrepe-gpt4v`, its
repository's `gpt-4v-results` folder; `lexsem.benchmarks.sugarcrepe_gpt4v`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import EVAL, DataDir

__all__ = ["convert_answers"]

FORMATS = ("sugarcrepe-gpt4v",)


def convert_answers(
    folder: Annotated[Path, typer.Argument(help="The published answers (gpt-4v-results).")],
    out: Annotated[Path, typer.Argument(help="The recorded-answers file to write (JSONL).")],
    source: Annotated[
        str, typer.Option("--from", help="The published layout: sugarcrepe-gpt4v.")
    ] = "sugarcrepe-gpt4v",
    subset: Annotated[str | None, typer.Option(help="One subset only (e.g. swap_obj).")] = None,
    data_dir: DataDir = EVAL.data_dir,
    force: Annotated[
        bool, typer.Option(help="Replace OUT if it exists and lexsem did not write it.")
    ] = False,
) -> None:
    """Convert published answers to recorded answers: every record matched to the public item
    by its subset and key (captions and image file name checked); a record about an item the
    public files lack is kept, and said, so that `score-answers` names it."""
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.benchmarks.sugarcrepe_gpt4v import write_gpt4v_answers
    from lexsem.outputs import check_outputs

    if source not in FORMATS:
        raise typer.BadParameter(f"{source!r} is not a known layout (one of {', '.join(FORMATS)})")
    check_outputs({"OUT": out}, inputs=[folder], force=force)
    selector = "sugarcrepe" + (f"/{subset}" if subset else "")
    bench = load_benchmark(selector, data_dir=data_dir)
    stats = write_gpt4v_answers(folder, bench.items, out)
    for (ordering, name), n in stats.answers.items():
        typer.echo(f"{ordering} {name}: {n} answers")
    for ordering, name, key in stats.unmatched:
        typer.echo(f"{ordering} {name}: the answer about item {key} is about no public item (kept)")
    for path, key in stats.not_records:
        typer.echo(f"{path}: entry {key!r} is no answer record (left out)")
    typer.echo(f"written: {out}", err=True)

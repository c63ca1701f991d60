"""`lexsem score-answers`: recorded free-form answers to the papers' multiple-choice prompts,
scored (and with `--run` written as a run folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import EVAL, AnswerRule, CacheDir, DataDir

__all__ = ["score_answers"]


def score_answers(
    answers: Annotated[Path, typer.Argument(help="JSONL (or JSON list) of recorded answers.")],
    benchmark: Annotated[
        str, typer.Option("--benchmark", "-b", help="NAME or NAME/SUBSET the answers are about.")
    ],
    prompt: Annotated[
        str | None,
        typer.Option(
            help="Prompt of records that name none: scpp1, scpp2, scpp3, scpp_order, sc_gpt4v."
        ),
    ] = None,
    data_dir: DataDir = EVAL.data_dir,
    cache_dir: CacheDir = EVAL.cache_dir,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write every score and parsed answer.")
    ] = None,
    run_out: Annotated[
        Path | None,
        typer.Option(
            "--run",
            help="Also write a run folder (per-item hits, CIs) of the answers, usable by "
            "compare and report; the answers must be to one prompt.",
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="The model's name in the run (default: the file's stem).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            help="Replace a run already in --run, and a --json file that lexsem did not write."
        ),
    ] = False,
    answer_rule: AnswerRule = EVAL.answer_rule,
    strict_items: Annotated[
        bool,
        typer.Option(
            "--strict-items",
            help="An answer about an item the benchmark does not have is an error (default: "
            "it is left out and named).",
        ),
    ] = False,
) -> None:
    """Score recorded free-form answers to multiple-choice prompts (a model run elsewhere, a
    benchmark's published answers): accuracy per prompt and option ordering, circular accuracy,
    the positions chosen, and the answers that name no single option; first, the items the
    file answers and the answers about items the benchmark does not have."""
    from lexsem.ask import score_answers as score_file
    from lexsem.outputs import check_output_dir, check_outputs, named_paths
    from lexsem.report.choice import choice_markdown, choice_record, choice_scores, coverage_lines

    check_outputs(
        {"--json": json_out}, inputs=named_paths(answers, benchmark, run_out), force=force
    )
    if run_out is not None:
        check_output_dir(run_out, kind="run.json", inputs=named_paths(answers, benchmark),
                         option="--run")  # fmt: skip
    run = score_file(answers, benchmark, prompt=prompt, name=name, run_out=run_out, force=force,
                     strict_items=strict_items, data_dir=data_dir, cache_dir=cache_dir,
                     answer_rule=answer_rule)  # fmt: skip
    scores = choice_scores(run)
    for line in coverage_lines(run):
        typer.echo(line)
    typer.echo(choice_markdown(scores))
    if run_out is not None:
        tasks = ", ".join(run.record.config.tasks)
        typer.echo(f"run folder: {run_out} ({run.record.model.name}; {tasks})", err=True)
    if json_out is not None:
        import json

        from lexsem.atomic import atomic_open
        from lexsem.outputs import GENERATOR

        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump({**GENERATOR, **choice_record(scores)}, fh, indent=2)

"""`lexsem score-answers`: recorded free-form answers to the papers' multiple-choice prompts,
scored (and with `--run` written as a run folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import EVAL, CacheDir, DataDir

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
    force: Annotated[bool, typer.Option(help="Replace a run already in --run.")] = False,
) -> None:
    """Score recorded free-form answers to multiple-choice prompts (a model run elsewhere, a
    benchmark's published answers): accuracy per prompt and option ordering, circular accuracy,
    the positions chosen, and the answers that name no single option."""
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.tasks.choice_report import choice_markdown, choice_record, score_recorded
    from lexsem.tasks.recorded import read_answers

    if run_out is not None:
        from lexsem.results.run_folder import check_out_dir

        check_out_dir(run_out, force=force)  # before any work
    loaded = load_benchmark(benchmark, data_dir=data_dir, cache_root=cache_dir)
    subsets = [s.spec.name for s in loaded.subsets]
    given = read_answers(answers, prompt=prompt, subset=subsets[0] if len(subsets) == 1 else None)
    scores = score_recorded(given, loaded.items, str(answers))
    typer.echo(choice_markdown(scores))
    if run_out is not None:
        _recorded_run(answers, given, benchmark, name, data_dir, cache_dir, run_out, force)
    if json_out is not None:
        import json

        from lexsem.atomic import atomic_open

        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump(choice_record(scores), fh, indent=2)


def _recorded_run(
    path: Path,
    given: list[Any],
    benchmark: str,
    name: str | None,
    data_dir: Path | None,
    cache_dir: Path | None,
    out: Path,
    force: bool,
) -> None:
    import hashlib

    from lexsem.cli.ask import write_recorded_run
    from lexsem.errors import DataError
    from lexsem.tasks.recorded import recorded_settings
    from lexsem.tasks.recorded_run import RecordedAnswers

    prompts = sorted({a.prompt for a in given})
    if len(prompts) != 1:
        raise DataError(f"{path}: a run is of one prompt; the file has {', '.join(prompts)}")
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    fp = {"backend": "recorded", "file": path.name, "sha256": sha, **recorded_settings(path)}
    recorded = RecordedAnswers(given, prompts[0], name or path.stem, fp, where=str(path))
    write_recorded_run(recorded, benchmark, data_dir, cache_dir, out, force)

"""`lexsem report`: paper-style tables of run folders, and with `--html` one page of analyses."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import EVAL, CacheDir, DataDir, one_of
from lexsem.errors import DataError

__all__ = ["report"]


class Format(str, Enum):
    md = "md"
    csv = "csv"
    latex = "latex"


def report(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders or run.json files (model runs and blind runs)."),
    ],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="md, csv or latex.", callback=one_of(Format))
    ] = "md",
    ci: Annotated[bool, typer.Option("--ci", help="Show 95% CIs.")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the table here.")] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write one self-contained HTML page with the analyses."),
    ] = None,
    data_dir: DataDir = EVAL.data_dir,
    cache_dir: CacheDir = EVAL.cache_dir,
    baseline: Annotated[
        str | None, typer.Option(help="Baseline model for the cross-benchmark arrows.")
    ] = None,
    parser: Annotated[
        str | None,
        typer.Option(help="Constituency parser for syntactic similarity / SLS (e.g. stanza)."),
    ] = None,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    title: Annotated[str, typer.Option(help="Title of the HTML page.")] = "lexsem report",
) -> None:
    """Paper-style tables (rows: models) from run folders; `--html` adds the analyses: linguistic
    priors (give blind runs too), similarity, McNemar, cross-benchmark ranks, qualitative cases."""
    from lexsem.atomic import atomic_open
    from lexsem.outputs import check_outputs
    from lexsem.report.all_tables import build_tables
    from lexsem.report.tables import to_csv, to_latex, to_markdown
    from lexsem.report.training import is_training_run, training_page, training_sections
    from lexsem.results.run import Run
    from lexsem.results.run_folder import load_run

    check_outputs({"--out": out, "--html": html}, inputs=runs)
    trained = [p for p in runs if is_training_run(p)]
    runs = _expand_training_runs(runs, untabulated=html is not None)
    if not runs and html is not None:  # training runs with no evaluation: their curves only
        with atomic_open(html, "w", encoding="utf-8") as fh:
            fh.write(training_page(trained, title))
        typer.echo("note: no evaluation to tabulate (the training runs judge on nothing)", err=True)
        typer.echo(f"HTML report written to {html}", err=True)
        return
    records = [load_run(r) for r in runs]
    # with --html the per-item files are read too: a damaged one fails before any output
    loaded = [Run.load(r) for r in runs] if html is not None else None
    _note_repeats(runs, records)
    tables = build_tables(records, ci=ci)
    render = {Format.md: to_markdown, Format.csv: to_csv, Format.latex: to_latex}[Format(fmt)]
    text = render(tables)
    if out is None:
        typer.echo(text, nl=False)
    else:
        with atomic_open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    if loaded is not None:
        from lexsem.report.analyses import ReportOptions, build_report

        opt = ReportOptions(
            data_dir=data_dir,
            cache_dir=cache_dir,
            baseline=baseline,
            parser=parser,
            n_boot=n_boot,
            seed=seed,
        )
        extra = training_sections(trained)  # loss and learning-rate curves, epochs
        page = build_report(loaded, opt, title=title, extra=extra)  # per-item tables
        with atomic_open(html, "w", encoding="utf-8") as fh:
            fh.write(page)
        typer.echo(f"HTML report written to {html}", err=True)


def _expand_training_runs(paths: list[Path], *, untabulated: bool = False) -> list[Path]:
    """A training run's folder stands for its evaluations (before training, each epoch), in
    order: before/after tables, McNemar against the base model, hard-test accuracy per
    checkpoint. With `untabulated` (the HTML page, which shows its curves anyway) a training
    run with no evaluation stands for none; else it is an error."""
    from lexsem.train.record import evaluation_folders

    out: list[Path] = []
    for p in paths:
        if not (Path(p) / "train.json").is_file():
            out.append(p)
        elif not untabulated:
            out += evaluation_folders(p)
        else:
            try:
                out += evaluation_folders(p)
            except DataError as exc:
                if "no evaluation yet" not in str(exc):
                    raise
    return out


def _note_repeats(paths: list[Path], records: list[Any]) -> None:
    """A run given twice is shown once: say so on stderr."""
    first: dict[str, Path] = {}
    for path, rec in zip(paths, records, strict=True):
        if rec.run_id in first:
            typer.echo(
                f"note: {path} holds the same run as {first[rec.run_id]} ({rec.run_id}); "
                "shown once",
                err=True,
            )
        first.setdefault(rec.run_id, path)

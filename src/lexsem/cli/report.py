"""`lexsem report`: paper-style tables of run folders, and with `--html` one page of analyses."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import EVAL, CacheDir, DataDir, NBoot, one_of
from lexsem.errors import LexsemError

__all__ = ["report"]


class Format(str, Enum):
    md = "md"
    csv = "csv"
    latex = "latex"


def report(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folders or run.json files (model runs and blind runs), or a sweep folder."
        ),
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
    n_boot: NBoot = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed (at least 0).")] = 0,
    title: Annotated[str, typer.Option(help="Title of the HTML page.")] = "lexsem report",
    explore_url: Annotated[
        str | None,
        typer.Option(help="A running `lexsem explore` (http://HOST:PORT): --html links to it."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace an existing --out or --html file that lexsem did not write."
        ),
    ] = False,
) -> None:
    """Paper-style tables (rows: models) from run folders; `--html` adds the analyses: linguistic
    priors (give blind runs too), similarity, McNemar, cross-benchmark ranks, qualitative cases."""
    from lexsem.atomic import atomic_open
    from lexsem.cli.run_paths import run_folders
    from lexsem.outputs import TABLE_MARKS
    from lexsem.report.all_tables import build_tables
    from lexsem.report.tables import to_csv, to_latex, to_markdown
    from lexsem.report.training import is_training_run, training_page, training_sections
    from lexsem.results.run import Run
    from lexsem.results.run_folder import load_run

    _check_options(runs, fmt, out, html, n_boot, seed, explore_url, force)
    trained = [p for p in runs if is_training_run(p)]
    given = list(runs)
    runs = run_folders(runs, untabulated=html is not None)
    if not runs and html is not None:  # training runs with no evaluation: their curves only
        with atomic_open(html, "w", encoding="utf-8") as fh:
            fh.write(training_page(trained, title))
        typer.echo("note: no evaluation to tabulate (the training runs judge on nothing)", err=True)
        typer.echo(f"HTML report written to {html}", err=True)
        return
    records = [load_run(r) for r in runs]
    # the per-item files are read too: a damaged one fails before any output
    loaded = [Run.load(r) for r in runs] if html is not None else None
    if loaded is None:
        _check_items(runs)
    _note_repeats(runs, records)
    tables = build_tables(records, ci=ci) + _same_items(runs, records, loaded)
    render = {Format.md: to_markdown, Format.csv: to_csv, Format.latex: to_latex}[Format(fmt)]
    text = render(tables)
    if out is None:
        typer.echo(text, nl=False)
    else:
        with atomic_open(out, "w", encoding="utf-8") as fh:
            fh.write(TABLE_MARKS.get(fmt, "") + text)  # the mark tells a later -o it is lexsem's
    if loaded is not None:
        from lexsem.report.analyses import ReportOptions, build_report

        opt = ReportOptions(data_dir=data_dir, cache_dir=cache_dir, baseline=baseline,
                            parser=parser, n_boot=n_boot, seed=seed,
                            explore_url=explore_url)  # fmt: skip
        extra = training_sections(trained) + _sweep_sections(given)  # curves; jobs without a run
        page = build_report(loaded, opt, title=title, extra=extra)  # per-item tables
        with atomic_open(html, "w", encoding="utf-8") as fh:
            fh.write(page)
        typer.echo(f"HTML report written to {html}", err=True)


def _check_options(
    runs: list[Path], fmt: str, out: Path | None, html: Path | None, n_boot: int, seed: int,
    explore_url: str | None, force: bool,
) -> None:  # fmt: skip
    """The options checked before any run is read: bounds, the explorer's address, the output
    files (never an input, never another program's file without --force)."""
    from lexsem.cli.options import check_bounds, check_explore_url
    from lexsem.cli.run_paths import check_output_file
    from lexsem.config import EvalConfig
    from lexsem.outputs import check_outputs

    check_bounds(EvalConfig, {"--n-boot": ("n_boot", n_boot)})
    check_explore_url(explore_url)
    if seed < 0:
        raise LexsemError(f"--seed {seed}: must be at least 0")
    for path, option, example in ((out, "--out", f"tables.{fmt}"), (html, "--html", "report.html")):
        if path is not None:
            check_output_file(path, option, example)
    check_outputs({"--out": out, "--html": html}, inputs=runs, force=force)


def _same_items(paths: list[Path], records: list[Any], loaded: list[Any] | None) -> list[Any]:
    """With a human study's run among the runs: every run on the items it answered
    (`lexsem.report.same_items`); none otherwise. A run without its per-item file (a run.json
    shared alone: `_check_items` warned) is left out of them."""
    from lexsem.report.same_items import same_items_tables
    from lexsem.results.run import Run
    from lexsem.results.run_folder import items_path
    from lexsem.results.samples import answers_a_sample

    if not any(answers_a_sample(r) for r in records):
        return []
    runs = loaded or [Run.load(p) for p in paths if items_path(p).exists()]
    seen = {r.record.run_id: r for r in runs}  # a run given twice is one run
    return same_items_tables(list(seen.values()))


def _sweep_sections(paths: list[Path]) -> list[Any]:
    """The section of the jobs without a run of each sweep folder given that has some."""
    from lexsem.cli.run_paths import sweep_missing
    from lexsem.report.sweep_jobs import sweep_jobs_section
    from lexsem.results.folder_swap import RUN_JSON
    from lexsem.sweep.record import SWEEP_JSON

    out = []
    for p in paths:
        if (p / SWEEP_JSON).is_file() and not (p / RUN_JSON).is_file():
            _, missing, total = sweep_missing(p)
            if missing:
                out.append(sweep_jobs_section(str(p), missing, total))
    return out


def _check_items(runs: list[Path]) -> None:
    """The tables need run.json only, yet a run's per-item file is checked as `--html` and
    `compare` read it: a damaged one is an error naming it; a missing one (a run.json shared
    alone) is said in one warning line."""
    from lexsem.results.run_folder import items_path, load_items

    for run in runs:
        file = items_path(run)
        if not file.exists():
            typer.echo(
                f"warning: {file}: no per-item file; tables from run.json only "
                "(--html and compare need it)",
                err=True,
            )
        else:
            load_items(run)


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

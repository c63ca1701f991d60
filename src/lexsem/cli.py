"""Command line: a thin layer over the Python API (`lexsem --help`)."""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli_options import (
    CacheDir,
    CocoTrain,
    CocoVal,
    DataDir,
    Exif,
    ImageRoot,
    MaxPixels,
    SkipBad,
    Workers,
)
from lexsem.errors import LexsemError
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS
from lexsem.warning_lines import warning_lines

app = typer.Typer(
    help="Do models understand meaning or only words? SugarCrepe++, VISLA, SugarCrepe, ...",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _friendly(fn):
    """Turn LexsemError into one clear line on stderr and exit status 2; lexsem's warnings
    (data not as published, cache problems) are `warning: ...` lines on stderr."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warning_lines(lambda text: typer.echo(text, err=True)):
                return fn(*args, **kwargs)
        except LexsemError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt as exc:  # Ctrl-C: say what was kept, exit 130 as shells do
            message = getattr(exc, "message", None)
            typer.echo(message() if callable(message) else "interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


def _quiet_libraries(quiet: bool) -> None:
    """With `-q`, or when stderr is not a terminal (lexsem prints its own progress lines
    there), the libraries' own progress bars (transformers' "Loading weights", Hub downloads)
    are off; the user's own HF_HUB_DISABLE_PROGRESS_BARS wins. Set before they are imported."""
    import os
    import sys

    if quiet or not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        if "transformers" in sys.modules:  # imported already (the Python API, tests)
            sys.modules["transformers"].utils.logging.disable_progress_bar()


def _one_of(choices: type[Enum]) -> Any:
    """A callback checking an option's value against an Enum's values, with "did you mean"."""

    def check(value: str | None) -> str | None:
        known = [c.value for c in choices]
        if value is None or value in known:
            return value
        from lexsem.registry import did_you_mean

        raise typer.BadParameter(
            f"{value!r} is not one of {', '.join(map(repr, known))}{did_you_mean(value, known)}"
        )

    return check


class TieChoice(str, Enum):
    strict = "strict"
    lenient = "lenient"


class Format(str, Enum):
    md = "md"
    csv = "csv"
    latex = "latex"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "run"


@app.command("eval")
@_friendly
def eval_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="Alias or BACKEND:NAME[?opts].")],
    benchmark: Annotated[
        list[str],
        typer.Option(
            "--benchmark",
            "-b",
            help="NAME, NAME/SUBSET[,SUBSET] or a file FORMAT:PATH (scpp:my.json); repeat.",
        ),
    ],
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="e.g. tot, t2t.")] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="The model's name in run.json, tables and plots [default: the alias or spec].",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run folder to write.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the run that --out already holds.")
    ] = False,
    data_dir: DataDir = None,
    cache_dir: CacheDir = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore the embedding cache.")] = (
        False
    ),
    offline: Annotated[bool, typer.Option("--offline", help="Never touch the network.")] = False,
    tie_policy: Annotated[
        str, typer.Option("--tie-policy", help="strict or lenient.", callback=_one_of(TieChoice))
    ] = "strict",
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples (0: none).")] = 1000,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 64,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N, mps.")] = "auto",
    dtype: Annotated[str, typer.Option(help="auto, fp32, fp16, bf16.")] = "auto",
    coco_val2017: CocoVal = None,
    coco_train2017: CocoTrain = None,
    image_root: ImageRoot = None,
    skip_bad_images: SkipBad = False,
    max_image_pixels: MaxPixels = DEFAULT_MAX_IMAGE_PIXELS,
    exif_transpose: Exif = None,
    num_workers: Workers = None,
    ci: Annotated[bool, typer.Option("--ci", help="Show 95% CIs in the table.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """Evaluate a model on benchmarks; writes run.json + items.parquet and prints the table.
    Progress goes to stderr: a bar on a terminal, a line every few seconds when piped. Ctrl-C
    keeps what was computed (the cache): the same command resumes."""
    from lexsem.config import build_config
    from lexsem.evaluator import Evaluator

    _quiet_libraries(quiet)
    if out is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        out = Path("runs") / f"{stamp}-{_slug(model)}"
    config = build_config(
        benchmarks=benchmark,
        tasks=task or None,
        name=name,
        data_dir=data_dir,
        cache_dir=cache_dir,
        use_cache=not no_cache,
        offline=True if offline else None,
        tie_policy=tie_policy,
        seed=seed,
        n_boot=n_boot,
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        coco_val2017=coco_val2017,
        coco_train2017=coco_train2017,
        image_root=image_root,
        skip_bad_images=skip_bad_images,
        max_image_pixels=max_image_pixels,
        exif_transpose=exif_transpose,
        num_workers=num_workers,
        keep_decoded_mb=0,  # one run per command: decoded images would never be used again
        progress=not quiet,  # a bar on a terminal, periodic lines when piped
    )
    run = Evaluator(config).run(model, out=out, force=force)  # checks --out first
    _eval_summary(run.record, out, quiet=quiet, ci=ci)


def _work_done(t: Any) -> str:
    """What the model was asked: texts encoded, and (image, text) pairs scored or answered."""
    parts = []
    if t.n_texts_unique or not t.n_pairs_unique:
        parts.append(f"{t.n_texts_unique} unique texts ({t.n_texts_cached} cached, "
                     f"{t.n_texts_encoded} encoded)")  # fmt: skip
    if t.n_pairs_unique:
        parts.append(f"{t.n_pairs_unique} unique image-text requests ({t.n_pairs_cached} cached, "
                     f"{t.n_pairs_scored} asked)")  # fmt: skip
    return "; ".join(parts)


def _eval_summary(record: Any, out: Path, *, quiet: bool, ci: bool) -> None:
    """The results table and a summary line (stderr); coverage below 100% is always said."""
    from lexsem.report.tables import build_tables, coverage_summary, to_markdown

    t = record.timings
    coverage = coverage_summary(record)  # items skipped or left out: say so, always
    if not quiet:
        typer.echo(to_markdown(build_tables([record], ci=ci)))
        typer.echo(
            f"{_work_done(t)} in {t.total_s:.1f} s; run written to {out}"
            + (f"; {coverage}" if coverage else ""),
            err=True,
        )
    elif coverage:
        typer.echo(f"warning: {coverage}", err=True)


@app.command()
@_friendly
def download(
    benchmark: Annotated[list[str] | None, typer.Argument(help="Benchmarks (default: all).")] = (
        None
    ),
    cache_dir: CacheDir = None,
    from_zip: Annotated[
        Path | None,
        typer.Option("--from-zip", help="Install COCO images from an already downloaded zip."),
    ] = None,
) -> None:
    """Download benchmark files (or `coco-val2017` / `coco-train2017` images) into the cache."""
    from lexsem import download as dl
    from lexsem.benchmarks import catalog as registry
    from lexsem.images import image_store as images
    from lexsem.paths import cache_dir as resolve_cache

    root = resolve_cache(cache_dir)
    for name in benchmark or registry.names():
        if name.startswith("coco-"):
            if name not in images.IMAGE_ARCHIVES:
                from lexsem.registry import did_you_mean

                known = list(images.IMAGE_ARCHIVES)
                raise LexsemError(
                    f"unknown image archive {name!r}{did_you_mean(name, known)}; known: "
                    f"{', '.join(known)}"
                )
            got = images.download_coco(name, cache_root=root, archive_file=from_zip, offline=False)
            typer.echo(f"{name}: {got.n_files} images in {got.folder}")
            continue
        spec, _ = registry.parse_selector(name)
        if spec.origin == "hf":
            typer.echo(f"{spec.name}: a Hugging Face dataset, fetched on first use (see README)")
            continue
        if not spec.sources:
            typer.echo(f"{spec.name}: generated locally, nothing to download")
        for src in spec.sources:
            path = dl.resolve_source(src, data_dir=None, cache_root=root, offline=False)
            typer.echo(f"{spec.name}: {path} sha256={src.sha256[:12]}… ok")


@app.command("score-answers")
@_friendly
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
    data_dir: DataDir = None,
    cache_dir: CacheDir = None,
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
    from lexsem.ask import score_answers as score_file
    from lexsem.report.choice import choice_markdown, choice_record, choice_scores

    run = score_file(answers, benchmark, prompt=prompt, name=name, run_out=run_out, force=force,
                     data_dir=data_dir, cache_dir=cache_dir)  # fmt: skip
    scores = choice_scores(run)
    typer.echo(choice_markdown(scores))
    if run_out is not None:
        tasks = ", ".join(run.record.config.tasks)
        typer.echo(f"run folder: {run_out} ({run.record.model.name}; {tasks})", err=True)
    if json_out is not None:
        import json

        from lexsem.atomic import atomic_open

        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump(choice_record(scores), fh, indent=2)


@app.command()
@_friendly
def validate(
    benchmark: Annotated[str, typer.Argument(help="NAME or NAME/SUBSET.")],
    data_dir: DataDir = None,
    cache_dir: CacheDir = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write JSON here.")] = None,
) -> None:
    """Health report of any benchmark (triplets, pairs, quads, ARO): counts vs source and paper,
    duplicates, texts or images that should differ but are equal, empty/long/odd texts."""
    import json

    from lexsem.atomic import atomic_open
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.benchmarks.validate import render_report, validate_items

    loaded = load_benchmark(benchmark, data_dir=data_dir, cache_root=cache_dir, strict=False)
    report = validate_items(loaded.spec, {s.spec.name: s.items for s in loaded.subsets})
    typer.echo(render_report(report))
    if json_out is not None:
        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump(report.to_dict(), fh, indent=2)


@app.command()
@_friendly
def report(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders or run.json files (model runs and blind runs)."),
    ],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="md, csv or latex.", callback=_one_of(Format))
    ] = "md",
    ci: Annotated[bool, typer.Option("--ci", help="Show 95% CIs.")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the table here.")] = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write one self-contained HTML page with the analyses."),
    ] = None,
    data_dir: DataDir = None,
    cache_dir: CacheDir = None,
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
    from lexsem.report.tables import build_tables, to_csv, to_latex, to_markdown
    from lexsem.results.run import Run
    from lexsem.results.run_folder import load_run

    runs = _expand_training_runs(runs)
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
        page = build_report(loaded, opt, title=title)  # per-item tables
        with atomic_open(html, "w", encoding="utf-8") as fh:
            fh.write(page)
        typer.echo(f"HTML report written to {html}", err=True)


def _expand_training_runs(paths: list[Path]) -> list[Path]:
    """A training run's folder stands for its evaluations (before training, each epoch), in
    order: before/after tables, McNemar against the base model, hard-test accuracy per
    checkpoint."""
    from lexsem.train.record import evaluation_folders

    out: list[Path] = []
    for p in paths:
        out += evaluation_folders(p) if (Path(p) / "train.json").is_file() else [p]
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


@app.command()
@_friendly
def compare(
    run_a: Annotated[Path, typer.Argument(help="Run folder A.")],
    run_b: Annotated[Path, typer.Argument(help="Run folder B.")],
    benchmark: Annotated[
        list[str] | None, typer.Option("--benchmark", "-b", help="Default: all shared.")
    ] = None,
    metric: Annotated[str | None, typer.Option(help="Metric (default: each main metric).")] = None,
) -> None:
    """Exact McNemar test of two runs on the paired per-item hits of each shared benchmark."""
    from lexsem.analysis.compare import items_total, mcnemar, plan_comparison
    from lexsem.results.run import Run

    a, b = Run.load(run_a), Run.load(run_b)
    if a.record.run_id == b.record.run_id:
        typer.echo(
            f"note: {run_a} and {run_b} hold the same run ({a.record.run_id}): every item agrees",
            err=True,
        )
    plan = plan_comparison(a, b, benchmark, metric)
    if not plan.pairs:  # say why there is nothing to show, never an empty table
        raise LexsemError(plan.why_empty())
    typer.echo("| benchmark | metric | items | A | B | A only | B only | p |")
    typer.echo("|---|---|---:|---:|---:|---:|---:|---:|")
    partial = False
    for bench, m in plan.pairs:
        r = mcnemar(a, b, bench, m)
        totals = [t for t in (items_total(a, bench, m), items_total(b, bench, m)) if t]
        items = f"{r.n}/{max(totals)}" if totals and r.n < max(totals) else str(r.n)
        partial |= items != str(r.n)
        typer.echo(
            f"| {bench} | {m} | {items} | {r.accuracy_a:.2f} | {r.accuracy_b:.2f} | {r.b} | "
            f"{r.c} | {r.p_value:.3g} |"
        )
    typer.echo(f"A = {a.record.model.name}, B = {b.record.model.name}; exact McNemar (two-sided).")
    if partial:
        typer.echo(
            "items: paired items scored / items of the benchmark (n/N): coverage below 100%, "
            "the test is over the scored items only (run.json: skipped, dropped, notices)"
        )
    for why in plan.skipped:
        typer.echo(f"skipped {why}")


class ListWhat(str, Enum):
    benchmarks = "benchmarks"
    models = "models"
    tasks = "tasks"


@app.command("list")
@_friendly
def list_cmd(
    what: Annotated[
        str, typer.Argument(help="benchmarks, models or tasks.", callback=_one_of(ListWhat))
    ] = "benchmarks",
) -> None:
    """List benchmarks (with subsets and tasks), model aliases, or tasks (`blind` included)."""
    if what == ListWhat.benchmarks.value:
        from lexsem.benchmarks import catalog as registry

        for name in registry.names():
            spec = registry.get(name)
            subs = ", ".join(f"{s.name} ({s.expected_items})" for s in spec.subsets)
            tasks = ", ".join(
                [*spec.text_tasks, *spec.image_tasks, *(f"{t} (opt-in)" for t in spec.opt_in_tasks)]
            )
            typer.echo(f"{name}: {spec.description}\n  subsets: {subs}\n  tasks: {tasks}")
    elif what == ListWhat.models.value:
        from lexsem.models.aliases import list_aliases

        for alias, spec_str in list_aliases().items():
            typer.echo(f"{alias:16s} {spec_str}")
    else:
        from lexsem.tasks.blind import BLIND_TRIPLET
        from lexsem.tasks.catalog import TASKS

        for t in [*(TASKS.get(n) for n in TASKS.names()), BLIND_TRIPLET]:
            metrics = ", ".join(t.metrics)
            typer.echo(f"{t.name:10s} {t.description} (metrics: {metrics})")


from lexsem.cli_ask import register as _register_ask  # noqa: E402
from lexsem.cli_train import register as _register_train  # noqa: E402

_register_ask(app, _friendly)
_register_train(app, _friendly)


def main() -> None:  # pragma: no cover
    app()

"""`lexsem eval`: one model on benchmarks through `Evaluator(config).run`; writes the run folder
and prints the results table and a summary line."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import (
    EVAL,
    ImageFolders,
    config_group,
    config_option,
    from_options,
    quiet_option,
    with_groups,
)
from lexsem.config import EvalConfig

__all__ = ["eval_cmd"]

Benchmarks = config_option(EvalConfig, "benchmarks", "--benchmark", "-b", more="Repeat it.")
Tasks = config_option(EvalConfig, "tasks", "--task", "-t")
EvalSettings = config_group(
    "EvalSettings", EvalConfig, "name", "tie_policy", "seed", "n_boot", "batch_size", "device",
    "dtype", "skip_bad_images", "max_image_pixels", "exif_transpose", "num_workers",
    "answer_rule", doc="How the model is run and the results are computed (EvalConfig's fields).",
    exif_transpose="--exif-transpose/--no-exif-transpose",
)  # fmt: skip

#: The options named otherwise than `--` and the field's name with dashes.
OPTION_OF = {"benchmarks": "--benchmark", "tasks": "--task", "use_cache": "--no-cache"}


@with_groups
def eval_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="Alias or BACKEND:NAME[?opts].")],
    benchmark: Benchmarks,
    task: Tasks = EVAL.tasks,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run folder to write.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the run that --out already holds.")
    ] = False,
    folders: ImageFolders = ImageFolders.DEFAULTS,
    # the config's use_cache, said the other way round: a flag turns it off
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore the embedding cache.")] = (
        not EVAL.use_cache
    ),
    # a flag: given, True; left out, the config's None (the environment decides)
    offline: Annotated[bool, typer.Option("--offline", help="Never touch the network.")] = False,
    settings: EvalSettings = EvalSettings.DEFAULTS,
    ci: Annotated[bool, typer.Option("--ci", help="Show 95% CIs in the table.")] = False,
    quiet: quiet_option("No table nor progress: errors and warnings only.") = False,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Also print where the wall time went (start-up, model load, images, "
            "tokenizing, each tower, the store, scoring, the rest; run.json timings.breakdown).",
        ),
    ] = False,
) -> None:
    """Evaluate a model on benchmarks; writes run.json + items.parquet and prints the table.
    Progress goes to stderr: a bar on a terminal, a line every few seconds when piped. Ctrl-C
    keeps what was computed (the cache): the same command resumes."""
    from lexsem import clock, paths
    from lexsem.cli.quiet import quiet_libraries
    from lexsem.evaluator import Evaluator
    from lexsem.outputs import check_output_dir, named_paths

    clock.count_start_up()  # the run's wall starts with this process
    quiet_libraries(quiet)
    if out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        out = Path("runs") / f"{stamp}-{_slug(model)}"
    config = from_options(
        EvalConfig, "evaluation", OPTION_OF,
        benchmarks=benchmark,
        tasks=task or None,
        **folders.given(),
        use_cache=not no_cache,
        offline=True if offline else None,
        **settings.given(),
        # the two settings where the CLI differs from the config's defaults:
        keep_decoded_mb=0,  # one run per command: decoded images would never be used again
        progress=not quiet,  # a bar on a terminal, periodic lines when piped
    )  # fmt: skip
    data_dir, cache_dir = paths.data_dir(folders.data_dir), paths.cache_dir(folders.cache_dir)
    inputs = [*named_paths(model, *benchmark, data_dir), cache_dir]
    check_output_dir(out, kind="run.json", inputs=inputs)  # not the data, model or cache folder
    run = Evaluator(config).run(model, out=out, force=force)  # checks --out first
    _eval_summary(run.record, out, quiet=quiet, ci=ci)
    if profile and run.record.timings.breakdown is not None:
        typer.echo(profile_table(run.record.timings.breakdown), err=True)


# how `--profile` names each part of the wall
PART_LABELS = {
    "start_up": "start-up (imports, command line)",
    "model_load": "model load (library, files, weights)",
    "data": "benchmarks loaded",
    "image_read": "images read and hashed",
    "image_decode": "waiting for decoded images",
    "tokenize": "tokenizing",
    "text_tower": "text tower (forward)",
    "image_tower": "image tower (forward)",
    "store": "request store (lookups, writes)",
    "scoring": "scoring, bootstrap intervals",
    "rest": "the rest",
}


def profile_table(b: Any) -> str:
    """Where the wall went (`Breakdown`): each part's seconds and share, then the decoding
    work done beside it."""
    wall = b.wall_s
    lines = [f"{'part':<38} {'seconds':>9} {'share':>7}"]
    for name, seconds in b.parts().items():
        share = 100 * seconds / wall if wall > 0 else 0.0
        lines.append(f"{PART_LABELS.get(name, name):<38} {seconds:>9.2f} {share:>6.1f}%")
    lines.append(f"{'wall':<38} {wall:>9.2f} {100.0 if wall > 0 else 0.0:>6.1f}%")
    towers = b.text_tower_s + b.image_tower_s
    if towers > 0:
        lines.append(
            f"the towers' forward passes: {towers:.2f} s, {100 * towers / wall:.1f}% of the wall"
        )
    decode = b.decode_read_s + b.decode_pil_s + b.decode_preprocess_s
    if decode > 0:
        where = (
            f"in {b.decode_workers} DataLoader worker(s), beside the wall: "
            f"{b.decode_workers_s:.2f} s"
            if b.decode_workers
            else "in the run's thread (within the wait above)"
        )
        lines.append(
            f"image decoding {where}; of it file reads {b.decode_read_s:.2f} s, PIL decodes "
            f"{b.decode_pil_s:.2f} s, preprocessing {b.decode_preprocess_s:.2f} s"
        )
    return "\n".join(lines)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "run"


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
    from lexsem.report.all_tables import build_tables
    from lexsem.report.tables import coverage_summary, to_markdown

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
    if record.model.dtype_reason and not quiet:
        typer.echo(f"dtype {record.model.dtype_reason}", err=True)
    if record.model.dtype_note:
        typer.echo(f"note: {record.model.dtype_note}", err=True)

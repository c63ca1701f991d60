"""The `lexsem annotate` commands that read a study's answers table: `agreement`, `human-run`,
`labelstudio-export` and `labelstudio-import` (docs/human-studies.md). `STATS_COMMANDS`
names them; `lexsem.cli.app` adds them to the `annotate` sub-app; the work is in
`lexsem.stats.agreement`, `lexsem.annotate.human_run` and `lexsem.annotate.labelstudio`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import (
    EVAL,
    CacheDir,
    DataDir,
    JsonOut,
    TiePolicy,
    check_bounds,
    config_group,
    with_groups,
)
from lexsem.config import EvalConfig

__all__ = ["STATS_COMMANDS", "agreement", "human_run", "labelstudio_export", "labelstudio_import"]

Answers = Annotated[Path, typer.Argument(help="The study's answers table (Parquet).")]
Force = Annotated[bool, typer.Option("--force", help="Replace an existing output.")]
Bootstrap = config_group(
    "Bootstrap", EvalConfig, "n_boot", "seed", "confidence",
    doc="The bootstrap's resamples and seed, and the intervals' level (EvalConfig's fields).",
)  # fmt: skip


def _num(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.3f}"


def _check_statistics(bootstrap: Any) -> None:
    """The bootstrap's options within their `EvalConfig` bounds (one line, before any work)."""
    check_bounds(EvalConfig, {"--" + k.replace("_", "-"): (k, v)
                              for k, v in bootstrap.given().items()})  # fmt: skip


def _print_table(title: str, headers: list[str], rows: list[list[str]]) -> None:
    from lexsem.report.tables import Table, to_markdown

    typer.echo(to_markdown([Table(title=title, headers=headers, rows=rows)]), nl=False)


def _finite(row: dict[str, object]) -> dict[str, object]:
    """NaN (an undefined statistic) as JSON null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


@with_groups
def agreement(
    answers: Answers,
    bootstrap: Bootstrap = Bootstrap.DEFAULTS,
    json_out: JsonOut = None,
    force: Force = False,
) -> None:
    """Inter-annotator agreement per task kind and subset: Cohen's kappa per annotator pair
    (and their mean, as BiVLC reports), Fleiss' kappa and Krippendorff's alpha, each with a
    bootstrap CI over items. Practice answers are left out; gold items are their own row."""
    from lexsem.outputs import check_outputs, named_paths
    from lexsem.results.answers_table import read_answers
    from lexsem.stats.agreement import agreement as compute

    _check_statistics(bootstrap)
    check_outputs({"--json": json_out}, inputs=named_paths(answers), force=force)
    table, _, _ = read_answers(answers)
    rows = compute(table, **bootstrap.given(), where=str(answers))
    _print_table(
        "Agreement",
        ["kind", "subset", "statistic", "pair", "items", "annotators", "value", "CI"],
        [[r.kind, r.subset, r.statistic, " / ".join(r.pair) if r.pair else "", str(r.items),
          str(r.annotators), _num(r.value),
          "-" if r.ci_low is None else f"[{_num(r.ci_low)}, {_num(r.ci_high)}]"]
         for r in rows],
    )  # fmt: skip
    if json_out is not None:
        from lexsem.atomic import atomic_open
        from lexsem.outputs import GENERATOR

        body = {**GENERATOR, **bootstrap.given(),
                "rows": [_finite(r.to_dict()) for r in rows]}  # fmt: skip
        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=2, allow_nan=False)
            fh.write("\n")


@with_groups
def human_run(
    answers: Answers,
    out: Annotated[Path, typer.Option("--out", "-o", help="The run folder to write.")],
    study: Annotated[
        str | None, typer.Option("--study", help="The study (when the table has several).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Shown as (default: human).")] = None,
    bootstrap: Bootstrap = Bootstrap.DEFAULTS,
    tie_policy: TiePolicy = EVAL.tie_policy,
    strict_items: Annotated[
        bool, typer.Option("--strict-items", help="An answer about an unknown item: an error.")
    ] = False,
    data_dir: DataDir = None,
    cache_dir: CacheDir = None,
    force: Force = False,
) -> None:
    """A study's answers as a run folder (model "human"): `lexsem report` and `lexsem compare`
    show it beside models. One hit per item: the majority of its annotators; BiVLC's I2T and
    T2I queries combined per instance (I2T, T2I, Group). Its accuracies get Wilson score
    intervals at --confidence (docs/human-studies.md, "Intervals and n"); --n-boot and --seed
    are recorded with the run and used by no interval of it."""
    from lexsem.annotate.human_run import human_run as make
    from lexsem.outputs import check_output_dir, named_paths

    _check_statistics(bootstrap)
    check_output_dir(out, kind="run.json", inputs=named_paths(answers), option="--out")
    res = make(answers, study=study, name=name, out=out, force=force, strict_items=strict_items,
               **bootstrap.given(), tie_policy=tie_policy,
               data_dir=data_dir, cache_dir=cache_dir)  # fmt: skip
    rec = res.run.record
    typer.echo(f"run folder: {out} ({rec.model.name}; {', '.join(rec.config.tasks)})")
    _print_table(
        "Answers",
        ["kind", "subset", "answers", "right", "annotators", "accuracy (over answers)"],
        [[a.kind, a.subset, str(a.answers), str(a.right), str(a.annotators), f"{a.accuracy:.2f}"]
         for a in [*res.answer_level, *res.gold]],
    )  # fmt: skip
    notes = [f"{n} {kind} answers (not a run's task kind)" for kind, n in res.left_out.items()]
    notes += [f"{res.skipped} skipped"] * bool(res.skipped)
    notes += [f"{res.unknown} about items the benchmark lacks (named in run.json)"] * bool(
        res.unknown
    )
    if notes:
        typer.echo("left out: " + "; ".join(notes))


def labelstudio_export(
    study: Annotated[Path, typer.Argument(help="The study file (SQLite).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The new folder to write.")],
    image_url: Annotated[
        str | None,
        typer.Option(
            "--image-url",
            help="Prefix of the tasks' image URLs (default: Label Studio's local-files storage "
            "of the folder's images/).",
        ),
    ] = None,
) -> None:
    """Write a study's Label Studio projects (one per task kind: tasks, labelling config,
    project settings), its images, the key the import needs (never uploaded) and a README."""
    from lexsem.annotate.labelstudio_export import LOCAL_FILES, export_study
    from lexsem.outputs import check_output_dir, named_paths

    check_output_dir(out, kind=None, inputs=named_paths(study), option="--out")
    files = export_study(study, out, image_url=LOCAL_FILES if image_url is None else image_url)
    for path in files:
        if path.parent.name != "images":
            typer.echo(str(path))
    n_images = sum(p.parent.name == "images" for p in files)
    if n_images:
        typer.echo(f"{n_images} images -> {out / 'images'}")


def labelstudio_import(
    exports: Annotated[
        list[Path], typer.Argument(help="Label Studio's JSON exports of the study's projects.")
    ],
    key: Annotated[
        Path, typer.Option("--key", help="The export's lexsem-key.json (labelstudio-export).")
    ],
    answers: Annotated[Path, typer.Option("--answers", "-o", help="The answers table to write.")],
    study: Annotated[
        str | None, typer.Option("--study", help="The study's name (default: the key's).")
    ] = None,
    force: Force = False,
) -> None:
    """Read Label Studio JSON exports of a study's projects (BiVLC: both) into one answers
    table (Parquet)."""
    import pyarrow.parquet as pq

    from lexsem.annotate.labelstudio import read_key
    from lexsem.annotate.labelstudio_import import import_exports
    from lexsem.atomic import atomic_path
    from lexsem.errors import LexsemError
    from lexsem.outputs import check_outputs, named_paths

    check_outputs({"--answers": answers}, inputs=named_paths(key, *exports), force=True)
    if answers.exists() and not force:
        raise LexsemError(f"--answers {answers} exists; pass --force to replace it")
    table = import_exports(exports, read_key(key), key_path=key, study=study)
    with atomic_path(answers) as tmp:
        pq.write_table(table, tmp)
    typer.echo(f"{table.num_rows} answers -> {answers}")


STATS_COMMANDS = {
    "agreement": agreement,
    "human-run": human_run,
    "labelstudio-export": labelstudio_export,
    "labelstudio-import": labelstudio_import,
}

"""The `lexsem annotate` commands that read a study's answers table: `agreement`, `human-run`,
`labelstudio-export` and `labelstudio-import` (docs/human-studies.md). `STATS_COMMANDS`
names them; `lexsem.cli.app` adds them to the `annotate` sub-app; the work is in
`lexsem.stats.agreement`, `lexsem.annotate.human_run` and `lexsem.annotate.labelstudio`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from lexsem.annotate.config import StudySettings
from lexsem.cli.options import (
    EVAL,
    CacheDir,
    Confidence,
    DataDir,
    JsonOut,
    NBoot,
    Seed,
    check_bounds,
    config_option,
    defaults,
)
from lexsem.config import EvalConfig

__all__ = ["STATS_COMMANDS", "agreement", "human_run", "labelstudio_export", "labelstudio_import"]

Answers = Annotated[Path, typer.Argument(help="The study's answers table (Parquet).")]
TiePolicy = config_option(EvalConfig, "tie_policy", "--tie-policy")
OrderSeed = config_option(StudySettings, "seed", "--seed")
STUDY = defaults(StudySettings)
Force = Annotated[bool, typer.Option("--force", help="Replace an existing output.")]


def _num(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.3f}"


def _check_statistics(n_boot: int, seed: int, confidence: float) -> None:
    """The bootstrap's options within their `EvalConfig` bounds (one line, before any work)."""
    check_bounds(EvalConfig, {"--n-boot": ("n_boot", n_boot), "--seed": ("seed", seed),
                              "--confidence": ("confidence", confidence)})  # fmt: skip


def _print_table(title: str, headers: list[str], rows: list[list[str]]) -> None:
    from lexsem.report.tables import Table, to_markdown

    typer.echo(to_markdown([Table(title=title, headers=headers, rows=rows)]), nl=False)


def _finite(row: dict[str, object]) -> dict[str, object]:
    """NaN (an undefined statistic) as JSON null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def agreement(
    answers: Answers,
    n_boot: NBoot = EVAL.n_boot,
    seed: Seed = EVAL.seed,
    confidence: Confidence = EVAL.confidence,
    json_out: JsonOut = None,
    force: Force = False,
) -> None:
    """Inter-annotator agreement per task kind and subset: Cohen's kappa per annotator pair
    (and their mean, as BiVLC reports), Fleiss' kappa and Krippendorff's alpha, each with a
    bootstrap CI over items. Practice answers are left out; gold items are their own row."""
    from lexsem.outputs import check_outputs, named_paths
    from lexsem.results.answers_table import read_answers
    from lexsem.stats.agreement import agreement as compute

    _check_statistics(n_boot, seed, confidence)
    check_outputs({"--json": json_out}, inputs=named_paths(answers), force=force)
    table, _, _ = read_answers(answers)
    rows = compute(table, n_boot=n_boot, seed=seed, confidence=confidence, where=str(answers))
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

        body = {**GENERATOR, "n_boot": n_boot, "seed": seed, "confidence": confidence,
                "rows": [_finite(r.to_dict()) for r in rows]}  # fmt: skip
        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=2, allow_nan=False)
            fh.write("\n")


def human_run(
    answers: Answers,
    out: Annotated[Path, typer.Option("--out", "-o", help="The run folder to write.")],
    study: Annotated[
        str | None, typer.Option("--study", help="The study (when the table has several).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Shown as (default: human).")] = None,
    n_boot: NBoot = EVAL.n_boot,
    seed: Seed = EVAL.seed,
    confidence: Confidence = EVAL.confidence,
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
    T2I queries combined per instance (I2T, T2I, Group)."""
    from lexsem.annotate.human_run import human_run as make
    from lexsem.outputs import check_output_dir, named_paths

    _check_statistics(n_boot, seed, confidence)
    check_output_dir(out, kind="run.json", inputs=named_paths(answers), option="--out")
    res = make(answers, study=study, name=name, out=out, force=force, strict_items=strict_items,
               n_boot=n_boot, seed=seed, confidence=confidence, tie_policy=tie_policy,
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
    tasks: Annotated[Path, typer.Argument(help="The tasks: a JSON list of task objects.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The folder to write into.")],
    study: Annotated[str, typer.Option("--study", help="The study's name.")],
    seed: OrderSeed = STUDY.seed,
) -> None:
    """Write Label Studio tasks (KIND.tasks.json) and labelling configs (KIND.config.xml)."""
    from lexsem.annotate.labelstudio import export_tasks
    from lexsem.errors import DataError
    from lexsem.outputs import check_output_dir, named_paths

    check_bounds(StudySettings, {"--seed": ("seed", seed)})
    check_output_dir(out, kind=None, inputs=named_paths(tasks), option="--out")
    try:
        body = json.loads(tasks.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("no such tasks file", file=tasks) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"not a JSON list of tasks ({exc})", file=tasks) from None
    if not isinstance(body, list):
        raise DataError("a JSON list of tasks is expected", file=tasks)
    for path in export_tasks(body, out, study=study, seed=seed):
        typer.echo(str(path))


def labelstudio_import(
    export: Annotated[Path, typer.Argument(help="Label Studio's JSON export.")],
    answers: Annotated[Path, typer.Option("--answers", "-o", help="The answers table to write.")],
    study: Annotated[str | None, typer.Option("--study", help="The study's name.")] = None,
    force: Force = False,
) -> None:
    """Read a Label Studio JSON export of lexsem's tasks into an answers table (Parquet)."""
    import pyarrow.parquet as pq

    from lexsem.annotate.labelstudio import import_export
    from lexsem.atomic import atomic_path
    from lexsem.errors import LexsemError
    from lexsem.outputs import check_outputs, named_paths

    check_outputs({"--answers": answers}, inputs=named_paths(export), force=True)
    if answers.exists() and not force:
        raise LexsemError(f"--answers {answers} exists; pass --force to replace it")
    table = import_export(export, study=study)
    with atomic_path(answers) as tmp:
        pq.write_table(table, tmp)
    typer.echo(f"{table.num_rows} answers -> {answers}")


STATS_COMMANDS = {
    "agreement": agreement,
    "human-run": human_run,
    "labelstudio-export": labelstudio_export,
    "labelstudio-import": labelstudio_import,
}

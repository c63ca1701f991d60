"""`lexsem train-detector`: synthetic-vs-natural caption and image detectors on a frozen CLIP
model (BiVLC, §5.4 and App. E), optionally judged on benchmarks as the reference judges them;
the work is `lexsem.train.artifact_detector` and `lexsem.train.artifact_eval`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import (
    ImageFolders,
    Quiet,
    config_group,
    from_options,
    one_of,
    with_groups,
)
from lexsem.errors import LexsemError
from lexsem.train.artifact_detector import DetectorConfig

__all__ = ["train_detector"]

KINDS = {"text": ("text",), "image": ("image",), "both": ("text", "image")}

DetectorSettings = config_group(
    "DetectorSettings", DetectorConfig, "model", "text_epochs", "image_epochs", "batch_size",
    "lr", "seed", "embed_batch", "val_fraction", "device",
    doc="How the detectors are trained (DetectorConfig's fields).",
    model=("--model", "-m"),
)  # fmt: skip


@with_groups
def train_detector(
    manifest: Annotated[
        Path,
        typer.Argument(
            help="Training manifest (JSONL or Parquet): natural image/caption vs "
            "negative_image / negative_image_caption; its dev rows select (none: "
            "--val-fraction of its train rows)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The detector folder.")],
    kind: Annotated[
        str,
        typer.Option(help="Heads to train: text, image or both.", callback=one_of(tuple(KINDS))),
    ] = "both",
    settings: DetectorSettings = DetectorSettings.DEFAULTS,
    benchmark: Annotated[
        list[str] | None,
        typer.Option(
            "--benchmark",
            "-b",
            help="After training, judge both detectors on this benchmark with the reference's "
            "rule (repeatable).",
        ),
    ] = None,
    folders: ImageFolders = ImageFolders.DEFAULTS,
    quiet: Quiet = False,
    force: Annotated[
        bool, typer.Option("--force", help="Train into a --out folder that already holds files.")
    ] = False,
) -> None:
    """Train synthetic-vs-natural detectors (a sigmoid head on the frozen text EOT / image CLS
    embedding; BiVLC §5.4) and write them to --out; `lexsem eval -m artifact:OUT -b bivlc`
    then runs them as a retrieval baseline."""
    from lexsem.cli.quiet import quiet_libraries
    from lexsem.train.artifact_detector import train_detectors
    from lexsem.train.artifact_eval import evaluate_detectors

    quiet_libraries(quiet)
    paths: dict[str, Any] = {**folders.given(), "device": settings.device}
    _check_out(out, manifest, force=force)
    if benchmark and KINDS[kind] != KINDS["both"]:
        raise typer.BadParameter("--benchmark judges both detectors: train with --kind both")
    cfg = from_options(
        DetectorConfig, "detector", {"kinds": "--kind"}, manifest=manifest, out=out,
        kinds=KINDS[kind], **settings.given(), **folders.given(),
    )  # fmt: skip
    echo = None if quiet else (lambda text: typer.echo(text, err=True))
    res = train_detectors(cfg, echo=echo)
    for k, rec in res.records.items():
        best = rec["best_epoch"]
        typer.echo(f"{k}: epoch {best} selected, validation accuracy "
                   f"{rec['validation_accuracy'][best]:.4f} -> {res.folder}")  # fmt: skip
    for bench in benchmark or []:
        found = evaluate_detectors(out, bench, **{k: v for k, v in paths.items() if v is not None})
        typer.echo(json.dumps(found, sort_keys=True))


def _check_out(out: Path, manifest: Path, *, force: bool) -> None:
    """Before any work: --out is not the manifest (nor holds it), and a folder already holding
    files (earlier detectors, anything else) is written into only with --force."""
    from lexsem.outputs import check_output_dir, named_paths

    check_output_dir(out, kind=None, inputs=named_paths(manifest), option="--out")
    if out.is_file():
        raise LexsemError(f"--out {out} is a file: give a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise LexsemError(
            f"--out {out} already holds files (earlier detectors would be replaced); choose "
            "another folder, or pass --force"
        )

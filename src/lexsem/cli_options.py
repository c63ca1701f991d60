"""The option types the CLI's commands share (`Annotated` typer options)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["CacheDir", "CocoTrain", "CocoVal", "DataDir", "Exif", "ImageRoot", "MaxPixels",
           "SkipBad", "Workers"]  # fmt: skip

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="LEXSEM_DATA_DIR",
        help="Offline folder holding the benchmark files (same names as downloads).",
    ),
]
CacheDir = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        envvar="LEXSEM_CACHE_DIR",
        help="Cache folder for downloads and embeddings (default: ~/.cache/lexsem).",
    ),
]
CocoVal = Annotated[
    Path | None,
    typer.Option("--coco-val2017", envvar="LEXSEM_COCO_VAL2017", help="COCO val2017 folder."),
]
CocoTrain = Annotated[
    Path | None,
    typer.Option(
        "--coco-train2017",
        envvar="LEXSEM_COCO_TRAIN2017",
        help="COCO train2017 folder (VISLA spatial).",
    ),
]
ImageRoot = Annotated[
    Path | None,
    typer.Option(
        "--image-root",
        envvar="LEXSEM_IMAGE_ROOT",
        help="Base folder of downloaded images [default: <cache>/images].",
    ),
]
SkipBad = Annotated[
    bool,
    typer.Option(
        "--skip-bad-images",
        help="Skip (and record) items whose image is missing, undecodable or too large.",
    ),
]
MaxPixels = Annotated[
    int,
    typer.Option(
        "--max-image-pixels",
        min=1,
        help="Refuse images with more pixels (width × height) than this; the benchmarks' "
        "images have a few megapixels at most.",
    ),
]
Exif = Annotated[
    bool | None,
    typer.Option(
        "--exif-transpose/--no-exif-transpose",
        help="Apply (or not) EXIF orientation for every benchmark [default: each "
        "benchmark's decode profile decides, as its reference does].",
    ),
]
Workers = Annotated[int | None, typer.Option("--num-workers", help="Image decoding workers.")]

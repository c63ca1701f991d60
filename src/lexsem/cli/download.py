"""`lexsem download`: benchmark files, or COCO image archives, into the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import EVAL, CacheDir
from lexsem.errors import LexsemError

__all__ = ["download"]


def download(
    benchmark: Annotated[list[str] | None, typer.Argument(help="Benchmarks (default: all).")] = (
        None
    ),
    cache_dir: CacheDir = EVAL.cache_dir,
    from_zip: Annotated[
        Path | None,
        typer.Option("--from-zip", help="Install COCO images from an already downloaded zip."),
    ] = None,
) -> None:
    """Download benchmark files (or `coco-val2017` / `coco-train2017` images) into the cache."""
    from lexsem import download as dl
    from lexsem.benchmarks import catalog as registry
    from lexsem.benchmarks.selectors import parse_selector
    from lexsem.images import coco_download as images
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
        spec, _ = parse_selector(name)
        if spec.origin == "hf":
            typer.echo(f"{spec.name}: a Hugging Face dataset, fetched on first use (see README)")
            continue
        if not spec.sources:
            typer.echo(f"{spec.name}: generated locally, nothing to download")
        for src in spec.sources:
            path = dl.resolve_source(src, data_dir=None, cache_root=root, offline=False)
            typer.echo(f"{spec.name}: {path} sha256={src.sha256[:12]}… ok")

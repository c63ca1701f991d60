"""`lexsem download`: benchmark files, or COCO image archives, into the cache; `--to DIR`
fills a data folder (what `--data-dir` / $LEXSEM_DATA_DIR read) with the pinned files."""

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
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            help="Also copy the pinned benchmark files into this data folder (the layout "
            "--data-dir / LEXSEM_DATA_DIR read: DIR/sugarcrepe_pp/swap_obj.json, ...); files "
            "already there are checked, never replaced.",
        ),
    ] = None,
) -> None:
    """Download benchmark files (or `coco-val2017` / `coco-train2017` images) into the cache;
    with --to DIR, also into the data folder DIR (for machines without network)."""
    from lexsem import download as dl
    from lexsem.benchmarks import catalog as registry
    from lexsem.benchmarks.selectors import parse_selector
    from lexsem.images import coco_download as images
    from lexsem.paths import cache_dir as resolve_cache

    root = resolve_cache(cache_dir)
    if to is not None and to.exists() and not to.is_dir():
        raise LexsemError(f"--to {to}: not a folder")
    for name in benchmark or registry.names():
        if name.startswith("coco-") and to is not None:
            raise LexsemError(
                f"--to fills a data folder with benchmark files; COCO images ({name}) go to the "
                "cache (or pass your own folder with --coco-val2017 / --coco-train2017)"
            )
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
            typer.echo(f"{spec.name}: a Hugging Face dataset, fetched on first use{_hf_hint(to)}")
            continue
        if not spec.sources:
            typer.echo(f"{spec.name}: generated locally, nothing to download")
        for src in spec.sources:
            if to is not None:
                path, copied = dl.fill_data_folder(src, to, cache_root=root, offline=False)
                state = "copied" if copied else "already there"
                typer.echo(f"{spec.name}: {path} sha256={src.sha256[:12]}… {state}")
                continue
            path = dl.resolve_source(src, data_dir=None, cache_root=root, offline=False)
            typer.echo(f"{spec.name}: {path} sha256={src.sha256[:12]}… ok")
    if to is not None:
        typer.echo(f"data folder: {to} (use it with --data-dir {to} or LEXSEM_DATA_DIR={to})")


def _hf_hint(to: Path | None) -> str:
    """How a Hugging Face dataset gets into the data folder `to` (`hf` CLI, README)."""
    if to is None:
        return " (see README)"
    return (
        f"; for the data folder: `hf download --repo-type dataset REPO --local-dir "
        f"{to}/hf/REPO` (docs/images.md)"
    )

"""`lexsem validate`: the health report of a benchmark's items."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import EVAL, CacheDir, DataDir

__all__ = ["validate"]


def validate(
    benchmark: Annotated[str, typer.Argument(help="NAME or NAME/SUBSET.")],
    data_dir: DataDir = EVAL.data_dir,
    cache_dir: CacheDir = EVAL.cache_dir,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write JSON here.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a --json file that lexsem did not write.")
    ] = False,
) -> None:
    """Health report of any benchmark (triplets, pairs, quads, ARO): counts vs source and paper,
    duplicates, texts or images that should differ but are equal, empty/long/odd texts."""
    import json

    from lexsem.atomic import atomic_open
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.benchmarks.validate import render_report, validate_items
    from lexsem.outputs import GENERATOR, check_outputs, named_paths

    check_outputs({"--json": json_out}, inputs=named_paths(benchmark), force=force)
    loaded = load_benchmark(benchmark, data_dir=data_dir, cache_root=cache_dir, strict=False)
    report = validate_items(loaded.spec, {s.spec.name: s.items for s in loaded.subsets})
    typer.echo(render_report(report))
    if json_out is not None:
        with atomic_open(json_out, "w", encoding="utf-8") as fh:
            json.dump({**GENERATOR, **report.to_dict()}, fh, indent=2)

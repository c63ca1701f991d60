"""A user's own benchmark file, evaluated without a pinned checksum: `FORMAT:PATH`.

PATH is one file (one subset, named after the file) or a folder (one subset per file of the
format's extension; for parquet, the subsets the data names). The benchmark behaves as the
built-in one of the same format (tasks, aggregates, image decoding) and is recorded in the run
as `origin: user` with the sha256 of every file read.

- `sugarcrepe`: SugarCrepe JSON (`{"0": {filename, caption, negative_caption}}`)
- `scpp`: SugarCrepe++ JSON (`[{id, filename, caption, caption2, negative_caption}]`)
- `visla` / `visla_spatial`: the VISLA generic / spatial TSV
- `bivlc`: BiVLC-style parquet (image, caption, negative_image, negative_caption, type, subtype)
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from lexsem.benchmarks.base import Benchmark, LoadContext, LoadedSubset, Loader, SubsetSpec
from lexsem.benchmarks.formats import (
    load_scpp_json,
    load_sugarcrepe_json,
    load_visla_generic_tsv,
    load_visla_spatial_tsv,
)
from lexsem.benchmarks.sources.files import Parser, parse_keeping_complete
from lexsem.download import sha256_file
from lexsem.errors import DataError, LexsemError
from lexsem.registry import did_you_mean

# format -> (registered benchmark it behaves as, parser or None for parquet, file extension)
FORMATS: dict[str, tuple[str, Parser | None, str]] = {
    "sugarcrepe": ("sugarcrepe", load_sugarcrepe_json, ".json"),
    "scpp": ("sugarcrepe_pp", load_scpp_json, ".json"),
    "visla": ("visla_generic", load_visla_generic_tsv, ".tsv"),
    "visla_spatial": ("visla_spatial", load_visla_spatial_tsv, ".tsv"),
    "bivlc": ("bivlc", None, ".parquet"),
}


def is_user_selector(selector: str) -> bool:
    """True for `FORMAT:PATH`; an unknown FORMAT is an error that lists the known ones."""
    fmt, sep, rest = selector.partition(":")
    if not sep or "/" in fmt or not rest:
        return False
    if fmt not in FORMATS:
        raise LexsemError(
            f"unknown benchmark file format {fmt!r} in {selector!r}"
            f"{did_you_mean(fmt, list(FORMATS))}; known: {', '.join(FORMATS)}"
        )
    return True


def _files(path: Path, ext: str, selector: str) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix == ext and p.is_file())
        if found:
            return found
        raise DataError(f"{selector}: no {ext} files in the folder {path}")
    raise DataError(f"{selector}: {path} does not exist")


def _file_loader(parse: Parser, files: dict[str, Path]) -> Loader:
    def load(bench: Benchmark, sub: SubsetSpec, ctx: LoadContext) -> LoadedSubset:
        path = files[sub.name]
        items, dropped = parse_keeping_complete(
            parse, path, sub.name, bench.drop_incomplete, ctx.strict
        )
        return LoadedSubset(sub, items, str(path), sha256_file(path), dropped)

    return load


def user_benchmark(selector: str) -> Benchmark:
    """The benchmark for `FORMAT:PATH` (files found and checked now; items read on load)."""
    from lexsem.benchmarks.catalog import get

    fmt, _, raw = selector.partition(":")
    like, parse, ext = FORMATS[fmt]
    path = Path(raw).expanduser()
    template = get(like)
    if parse is None:
        return _parquet_benchmark(template, fmt, path, selector)
    files = {p.stem: p for p in _files(path, ext, selector)}
    return dataclasses.replace(
        template,
        name=f"{fmt}:{path.stem}",
        description=f"user file(s) {raw} read as {like}",
        subsets=tuple(SubsetSpec(stem, None, expected_items=0) for stem in files),
        loader=_file_loader(parse, files),
        origin="user",
        aggregates=(),
    )


def _parquet_benchmark(template: Benchmark, fmt: str, path: Path, selector: str) -> Benchmark:
    from lexsem.benchmarks import bivlc
    from lexsem.benchmarks.sources.hf_load import load_hf_benchmark

    datasets = {"bivlc": bivlc.DATASET}  # the parquet formats: the Hub dataset each mirrors
    files = _files(path, ".parquet", selector)
    digest = hashlib.sha256("\n".join(sha256_file(f) for f in files).encode())
    spec = dataclasses.replace(datasets[fmt], key=f"{fmt}-{digest.hexdigest()[:12]}")
    result = load_hf_benchmark(spec, data_dir=path)
    names = list(dict.fromkeys(it.subset for it in result.items))
    loader = _parquet_loader(result, digest.hexdigest(), str(path))
    return dataclasses.replace(
        template,
        name=f"{fmt}:{path.stem}",
        description=f"user parquet {path} read as {template.name}",
        subsets=tuple(SubsetSpec(n, None, expected_items=0) for n in names),
        loader=loader,
        origin="user",
    )


def _parquet_loader(result: object, sha256: str, label: str) -> Loader:
    def load(bench: Benchmark, sub: SubsetSpec, ctx: LoadContext) -> LoadedSubset:
        items = [it for it in result.items if it.subset == sub.name]  # type: ignore[attr-defined]
        return LoadedSubset(sub, items, label, sha256)

    return load

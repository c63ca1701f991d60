"""A user's own benchmark file, evaluated without a pinned checksum: `FORMAT:PATH`.

PATH is one file (one subset, named after the file) or a folder (one subset per file of the
format's extension, except a frozen benchmark's `data_card.json`, `lexsem.benchmarks.frozen`;
for parquet, the subsets the data names). The benchmark behaves as the
built-in one of the same format (tasks, aggregates, image decoding) and is recorded in the run
as `origin: user` with the sha256 of every file read.

Each format's fields and a minimal file: `SCHEMAS` (`lexsem list formats`, docs/extending.md).
The formats are the registry `FORMATS`; a plugin adds one with `register_format`.
The image reference of the JSON and TSV formats may be left out: text-only tasks run on such
a file, image tasks name the item that has none.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import NamedTuple

from lexsem.benchmarks.base import Benchmark, LoadContext, LoadedSubset, Loader, SubsetSpec
from lexsem.benchmarks.formats import (
    load_scpp_json,
    load_sugarcrepe_json,
    load_visla_generic_tsv,
    load_visla_spatial_tsv,
)
from lexsem.benchmarks.frozen import CARD_JSON
from lexsem.benchmarks.sources.files import Parser, parse_keeping_complete
from lexsem.digests import sha256_file
from lexsem.errors import DataError, LexsemError
from lexsem.registry import Registry, did_you_mean, import_object


class Format(NamedTuple):
    """A `FORMAT:PATH` format: the registered benchmark it behaves as, its parser (a
    `Parser`, a lazy "module:attr" naming one, or None for the built-in parquet format) and its
    files' extension."""

    like: str
    parser: Parser | str | None
    extension: str


FORMATS: Registry[Format] = Registry(
    "benchmark file format",
    Format,
    {
        "sugarcrepe": Format("sugarcrepe", load_sugarcrepe_json, ".json"),
        "scpp": Format("sugarcrepe_pp", load_scpp_json, ".json"),
        "visla": Format("visla_generic", load_visla_generic_tsv, ".tsv"),
        "visla_spatial": Format("visla_spatial", load_visla_spatial_tsv, ".tsv"),
        "bivlc": Format("bivlc", None, ".parquet"),
    },
)


@dataclasses.dataclass(frozen=True)
class Schema:
    """What a `FORMAT:PATH` file holds: its required and optional fields and a minimal file."""

    layout: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    example: str  # a complete file of one item (for `bivlc`, its columns as a table)


SCHEMAS: dict[str, Schema] = {
    "sugarcrepe": Schema(
        "a JSON object of items keyed by item id (SugarCrepe's pair files)",
        ("caption", "negative_caption"),
        ("filename",),
        '{"0": {"filename": "000000391895.jpg", "caption": "A man rides a horse.", '
        '"negative_caption": "A horse rides a man."}}',
    ),
    "scpp": Schema(
        "a JSON list of items (SugarCrepe++'s triplet files): P1 caption, P2 caption2, "
        "N negative_caption",
        ("id", "caption", "caption2", "negative_caption"),
        ("filename",),
        '[{"id": 0, "filename": "000000391895.jpg", "caption": "A man rides a horse.", '
        '"caption2": "A horse carries a man.", "negative_caption": "A horse rides a man."}]',
    ),
    "visla": Schema(
        "tab-separated, a header row, one triplet per row (VISLA's generic file)",
        ("caption", "second positive", "negative_caption"),
        ("filename",),
        "filename\tcaption\tsecond positive\tnegative_caption\n"
        "000000391895.jpg\tA man rides a horse.\tA horse carries a man.\tA horse rides a man.\n",
    ),
    "visla_spatial": Schema(
        "tab-separated, a header row, one triplet per row (VISLA's spatial file)",
        ("sent1", "sent2", "Best reference (Semantically close)"),
        ("image",),
        "image\tsent1\tsent2\tBest reference (Semantically close)\n"
        "000000391895.jpg\tThe cat is in the box.\tThe box contains the cat.\t"
        "The cat is outside the box.\n",
    ),
    "bivlc": Schema(
        "parquet, one quad per row (BiVLC's test split as `datasets` writes it: images as "
        "Image cells, {bytes, path}); subsets are `<type>_<subtype>`",
        ("image", "caption", "negative_image", "negative_caption", "type", "subtype"),
        (),
        "image | caption | negative_image | negative_caption | type | subtype\n"
        "<png bytes> | A red car. | <png bytes> | A blue car. | replace | att\n",
    ),
}


def register_format(
    name: str, like: str, parser: Parser | str, extension: str, *, replace: bool = False
) -> None:
    """Register the format `name` of `-b NAME:PATH`: files of `extension` (`.txt`) read by
    `parser` (`parser(path, subset, *, strict=True) -> items`, or a lazy "module:attr" naming
    it), the benchmark then behaving as the registered benchmark `like` (its tasks, aggregates,
    image decoding). A taken name (a built-in one too) is refused unless `replace`; a plugin's,
    naming both."""
    if not name or not isinstance(name, str) or ":" in name or "/" in name:
        raise LexsemError(f"a benchmark file format name has no ':' or '/', got {name!r}")
    if not extension.startswith(".") or len(extension) < 2:
        raise LexsemError(f"format {name!r}: its extension starts with '.', got {extension!r}")
    if not (callable(parser) or isinstance(parser, str)):
        raise LexsemError(f"format {name!r}: its parser must be callable or 'module:attr'")
    FORMATS.add(name, Format(like, parser, extension), replace=replace)


def describe_formats() -> str:
    """Every `FORMAT:PATH` format: extension, layout, fields and a minimal file (a plugin's:
    its first line only, marked `(plugin: NAME)`)."""
    blocks = []
    for fmt in FORMATS.entries():
        like, _, ext = FORMATS.get(fmt)
        header = f"{fmt}:PATH  ({ext} file, or a folder of them; read as {like})"
        header += FORMATS.plugin_note(fmt)
        schema = SCHEMAS.get(fmt)
        if schema is None:
            blocks.append(header)
            continue
        optional = f"; optional: {', '.join(schema.optional)}" if schema.optional else ""
        blocks.append(
            f"{header}\n"
            f"  {schema.layout}\n"
            f"  fields: {', '.join(schema.required)}{optional}\n"
            f"  example:\n" + "\n".join(f"    {line}" for line in schema.example.splitlines())
        )
    return "\n".join(blocks)


def is_user_selector(selector: str) -> bool:
    """True for `FORMAT:PATH`; an unknown FORMAT is an error that lists the known ones."""
    fmt, sep, rest = selector.partition(":")
    if not sep or "/" in fmt or not rest:
        return False
    if fmt not in FORMATS:
        known = list(FORMATS.entries())
        raise LexsemError(
            f"unknown benchmark file format {fmt!r} in {selector!r}"
            f"{did_you_mean(fmt, known)}; known: {', '.join(known)}"
        )
    return True


def _files(path: Path, ext: str, selector: str) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(
            p for p in path.iterdir() if p.suffix == ext and p.is_file() and p.name != CARD_JSON
        )
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
    like, parse, ext = FORMATS.get(fmt)
    path = Path(raw).expanduser()
    template = get(like)
    if parse is None:
        return _parquet_benchmark(template, fmt, path, selector)
    parser: Parser = import_object(parse) if isinstance(parse, str) else parse  # type: ignore[assignment]
    files = {p.stem: p for p in _files(path, ext, selector)}
    return dataclasses.replace(
        template,
        name=f"{fmt}:{path.stem}",
        description=f"user file(s) {raw} read as {like}",
        subsets=tuple(SubsetSpec(stem, None, expected_items=0) for stem in files),
        loader=_file_loader(parser, files),
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
    if not names:
        raise DataError(f"{selector}: no rows to evaluate in {', '.join(map(str, files))}")
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

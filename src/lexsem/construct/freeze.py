"""Stage `freeze`: the accepted rows of a build written as a benchmark in lexsem's own formats,
with the sha256 of every file and a data card (docs/building.md, "Freeze").

Datasheets for datasets ask a dataset to say where its items came from, how they were made and
filtered, and under which licence; the card holds what the build recorded (build.json: recipe,
input sha256, generator id and fingerprint, seed, each stage's settings, prompts among them,
and its acceptance counts, lexsem version), the counts of the stages that fold people's
answers back (`HUMAN_STAGES`: BiVLC's best-image and ambiguity answers, a validation study's
accepted / edited / rejected items; section "Human steps") and what the recipe adds
(`licences`, `notes`: blind-text baseline scores, ...).

Output, in the build folder (layout: `lexsem.benchmarks.frozen`), written as one folder swapped
into place (`lexsem.atomic.replace_dir`): ``benchmark/<subset>.json`` (format ``scpp``:
SugarCrepe++ triplets; ``sugarcrepe``: SugarCrepe pairs), ``benchmark/<subset>.tsv`` (format
``visla``: VISLA's triplet file, columns ``filename`` (where the rows have images), ``caption``,
``second positive``, ``negative_caption``, ``source``, ``source_id``; scored with VISLA's tasks,
T2T with P1-N and P2-N, and I2T; item ids are the row numbers) or ``benchmark/test.parquet``
(format ``bivlc``: BiVLC's quads, two images and two captions per row, the images' bytes embedded
as `datasets` writes Image cells, subsets ``<type>_<subtype>``; image paths relative to the build
folder, or to `image_root` for the positive images), ``benchmark/data_card.json``,
``benchmark/README.md`` (a Hugging Face dataset card, `lexsem.construct.data_card`) and, for
``scpp``, ``sugarcrepe`` and ``visla``, ``benchmark/data/<subset>.parquet``
(`datasets.load_dataset` reads the folder: `lexsem.construct.dataset_files`). `lexsem eval -b
build:DIR` runs it. The rows are returned unchanged; rejected rows are left out of the benchmark
and counted per reason.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lexsem._version import __version__
from lexsem.atomic import replace_dir
from lexsem.benchmarks.frozen import BENCHMARK_DIR, CARD_JSON, CARD_KIND, CARD_MD
from lexsem.construct.build_record import read_build_record
from lexsem.construct.data_card import card_markdown, category_counts
from lexsem.construct.dataset_files import configs, write_dataset_files
from lexsem.construct.stage import REJECTED, Columns, Stage, StageContext, accepted
from lexsem.digests import file_sha256
from lexsem.errors import LexsemError

__all__ = ["freeze"]

FORMATS = ("scpp", "sugarcrepe", "bivlc", "visla")
VISLA_COLUMNS = ("caption", "second positive", "negative_caption")  # VISLA's generic file
BIVLC_FILE = "test.parquet"  # the split BiVLC's loader reads
SUBSET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_T = TypeVar("_T")
# the stages that fold people's answers back: lexsem.construct.human and
# lexsem.construct.fold_back_validation
HUMAN_STAGES = ("fold_back_answers", "fold_back_validation")


def _column(rows: Any, name: str, what: str) -> list[Any]:
    if name not in rows.column_names:
        raise LexsemError(
            f"freeze: the rows have no column {name!r} (setting `{what}`); they have "
            f"{', '.join(rows.column_names)}"
        )
    return rows[name].to_pylist()


def _text(value: Any, row: dict[str, Any], what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise LexsemError(
            f"freeze: accepted row {row['source']}:{row['source_id']} has no text in `{what}` "
            f"({value!r}); reject it in an earlier stage"
        )
    return value


def _items(
    rows: Any, fmt: str, cols: dict[str, str | None], subset: str | None, default_subset: str,
    id_column: str | None,
) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    """The accepted rows as items of `fmt`, per subset, in row order."""
    keep = accepted(rows).to_pylist()
    data = {k: _column(rows, c, k) for k, c in cols.items() if c is not None and k != "image"}
    images = (
        rows[cols["image"]].to_pylist()
        if cols["image"] is not None and cols["image"] in rows.column_names
        else [None] * rows.num_rows
    )
    subsets = _column(rows, subset, "subset") if subset else [default_subset] * rows.num_rows
    ids = _column(rows, id_column, "id") if id_column else None
    sources, source_ids = rows["source"].to_pylist(), rows["source_id"].to_pylist()
    out: dict[str, list[dict[str, Any]]] = {}
    for i, ok in enumerate(keep):
        if not ok:
            continue
        prov = {"source": sources[i], "source_id": source_ids[i]}
        name = subsets[i]
        if not isinstance(name, str) or not SUBSET_NAME.match(name):
            raise LexsemError(
                f"freeze: accepted row {prov['source']}:{prov['source_id']}: subset {name!r} is "
                "not a file name (letters, digits, '_', '-', '.')"
            )
        items = out.setdefault(name, [])
        key = str(ids[i]) if ids is not None else str(len(items))
        texts = {k: _text(v[i], prov, k) for k, v in data.items()}
        image = images[i] if isinstance(images[i], str) and images[i] else None
        if fmt in ("scpp", "visla"):
            item = {"id": key, "filename": image, "caption": texts["p1"],
                    "caption2": texts["p2"], "negative_caption": texts["n"]}  # fmt: skip
        else:
            item = {"id": key, "filename": image, "caption": texts["p1"],
                    "negative_caption": texts["n"]}  # fmt: skip
        if image is None:
            del item["filename"]
        items.append({**item, **prov})
    for name, items in out.items():
        seen = Counter(it["id"] for it in items)
        twice = [k for k, n in seen.items() if n > 1]
        if twice:
            raise LexsemError(
                f"freeze: subset {name!r}: item id(s) {', '.join(twice[:5])} given to more than "
                f"one row (column {id_column!r})"
            )
    return out


def _image_bytes(path: Any, root: Path, row: dict[str, Any], what: str) -> bytes:
    if not isinstance(path, str) or not path:
        raise LexsemError(
            f"freeze: accepted row {row['source']}:{row['source_id']} has no image in `{what}`; "
            "reject it in an earlier stage"
        )
    p = Path(path).expanduser()
    p = p if p.is_absolute() else root / p
    try:
        return p.read_bytes()
    except OSError as exc:
        raise LexsemError(
            f"freeze: accepted row {row['source']}:{row['source_id']}: cannot read its image "
            f"{p} (`{what}`: {exc.strerror})"
        ) from None


def _bivlc_items(
    rows: Any, cols: dict[str, str | None], out: Path, image_root: Path
) -> list[dict[str, Any]]:
    """The accepted rows as BiVLC quads, images read as bytes."""
    keep = accepted(rows).to_pylist()
    data = {k: _column(rows, c, k) for k, c in cols.items() if c is not None}
    sources, source_ids = rows["source"].to_pylist(), rows["source_id"].to_pylist()
    items = []
    for i, ok in enumerate(keep):
        if not ok:
            continue
        prov = {"source": sources[i], "source_id": source_ids[i]}
        items.append({
            "image": {"bytes": _image_bytes(data["image"][i], image_root, prov, "image"),
                      "path": None},
            "caption": _text(data["p1"][i], prov, "p1"),
            "negative_image": {"bytes": _image_bytes(data["negative_image"][i], out, prov,
                                                     "negative_image"), "path": None},
            "negative_caption": _text(data["n"][i], prov, "n"),
            "type": _text(data["type"][i], prov, "type"),
            "subtype": _text(data["subtype"][i], prov, "subtype"),
            **prov,
        })  # fmt: skip
    return items


def _write_bivlc(items: list[dict[str, Any]], path: Path) -> None:
    """A parquet file as `datasets` writes BiVLC's (Image columns as {bytes, path} structs,
    the features in the schema's metadata)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    names = ("image", "caption", "negative_image", "negative_caption", "type", "subtype",
             "source", "source_id")  # fmt: skip
    arrays = {
        n: pa.array([it[n] for it in items], image if n.endswith("image") else pa.string())
        for n in names
    }
    features = {
        n: {"_type": "Image"} if n.endswith("image") else {"dtype": "string", "_type": "Value"}
        for n in names
    }
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    pq.write_table(pa.table(arrays).replace_schema_metadata(meta), path)


def _write_visla(items: list[dict[str, Any]], path: Path) -> None:
    """VISLA's tab-separated triplets (literal fields, no quoting: `read_tsv`), `filename`
    first where any item has an image, the provenance last."""
    images = any(it.get("filename") for it in items)
    head = ["filename"] * images + [*VISLA_COLUMNS, "source", "source_id"]
    keys = ["filename"] * images + ["caption", "caption2", "negative_caption", "source",
                                    "source_id"]  # fmt: skip
    lines = ["\t".join(head)]
    for it in items:
        fields = [str(it.get(k) or "") for k in keys]
        bad = next((f for f in fields if any(c in f for c in "\t\r\n")), None)
        if bad is not None:
            raise LexsemError(
                f"freeze: accepted row {it['source']}:{it['source_id']}: {bad!r:.60} holds a tab "
                "or a line break, which VISLA's tab-separated file cannot hold; clean it in an "
                "earlier stage"
            )
        lines.append("\t".join(fields))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _write_items(fmt: str, items: list[dict[str, Any]], path: Path) -> None:
    if fmt == "visla":
        _write_visla(items, path)
        return
    if fmt == "sugarcrepe":
        body: Any = {it["id"]: {k: v for k, v in it.items() if k != "id"} for it in items}
    else:
        body = items
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(body, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


def _build_record(folder: Path) -> dict[str, Any] | None:
    """What build.json records of the stages before this one (None outside a build), as a card
    to share holds it: the input by its file's name (its sha256 says which file), paths under
    the user's home folder written ``~/...`` (`lexsem.results.redact`)."""
    from lexsem.results.redact import shareable_data

    record = read_build_record(folder)
    if record is None:
        return None
    keep = {"lexsem_version", "recipe", "input", "model", "image_model", "seed", "stages"}
    body = record.model_dump(mode="json", include=keep)
    body["input"]["described"] = Path(body["input"]["described"]).name
    return shareable_data(body)


def _human_steps(build: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each human step of the build (a stage of `HUMAN_STAGES`): its name, use, counts and
    rejections per reason, as build.json records them."""
    stages = (build or {}).get("stages") or []
    return [
        {"stage": s.get("name"), "use": s.get("use"), "counts": s.get("counts") or {},
         "rejected": s.get("rejected") or {}}
        for s in stages
        if isinstance(s, dict) and s.get("use") in HUMAN_STAGES
    ]  # fmt: skip


def freeze(
    rows: Any,
    ctx: StageContext | None,
    *,
    format: str = "scpp",
    p1: str = "p1",
    p2: str | None = None,
    n: str = "n",
    image: str | None = "image",
    id: str | None = None,
    subset: str | None = None,
    default_subset: str = "all",
    negative_image: str = "negative_image",
    type: str = "type",
    subtype: str = "subtype",
    image_root: str | None = None,
    title: str = "",
    licences: dict[str, str] | None = None,
    notes: dict[str, Any] | None = None,
) -> Any:
    """Write the accepted rows as a benchmark in `ctx.out`/benchmark (see the module doc).

    `p1`, `p2`, `n`, `image`: the columns of the positive, second positive (``scpp`` and ``visla``;
    default ``p2``), negative and image reference (optional: a missing column or a null is an item
    without an image, so a text-only build needs no setting); `id`: the column of item ids (default:
    0, 1, ... per subset); `subset`: the column naming each row's subset (default: every row in
    `default_subset`); `licences`: {source: licence} for the card; `notes`: more sections of the
    card (e.g. ``{"human validation" = {...}, "blind-text baselines" = {...}}``). Format ``bivlc``:
    `image` and `negative_image` are the columns of the two images' paths (the positive read from
    `image_root`, default the build folder, when relative), `type` and `subtype` the columns of
    SugarCrepe's category."""
    if ctx is None:
        raise LexsemError("freeze: needs the build folder (a StageContext)")
    _check_settings(format, p2, default_subset, subset, id)
    cols = _columns(format, p1, p2, n, image, negative_image, type, subtype)
    if format == "bivlc":
        root = ctx.out / Path(image_root).expanduser() if image_root else ctx.out
        quads = _bivlc_items(rows, cols, ctx.out, root)
        subsets = {"test": quads} if quads else {}
    else:
        subsets = _items(rows, format, cols, subset, default_subset, id)
    if not subsets:
        raise LexsemError("freeze: no accepted rows to freeze")
    left_out = _left_out(rows)
    frozen = [it for name in sorted(subsets) for it in subsets[name]]
    target = ctx.out / BENCHMARK_DIR

    categories = category_counts(
        _category_names(rows, format, cols, subset, default_subset),
        [f"{it['type']}_{it['subtype']}" for it in frozen]
        if format == "bivlc"
        else [name for name in sorted(subsets) for _ in subsets[name]],
    )

    def write(folder: Path) -> list[dict[str, Any]]:
        files = _write_subsets(format, subsets, folder)
        dataset_files = write_dataset_files(format, subsets, folder)
        build = _build_record(ctx.out)
        card = {
            "generator": "lexsem",
            "kind": CARD_KIND,
            "lexsem_version": __version__,
            "title": title,
            "format": format,
            "columns": {k: v for k, v in {**cols, "id": id, "subset": subset}.items()},
            "files": files,
            "dataset_files": dataset_files,
            "configs": configs(format, files if format == "bivlc" else dataset_files),
            "rows": {"in": rows.num_rows, "frozen": len(frozen), "left_out": left_out},
            "categories": categories,
            "items_with_image": sum(1 for it in frozen if it.get("filename") or "image" in it),
            "sources": _sources(frozen, licences or {}),
            "seed": ctx.seed,
            "build": build,
            "human": _human_steps(build),
            "notes": notes or {},
        }
        _write_card(card, folder)
        return files

    files = _swap_in(ctx.out, write)
    ctx.count("frozen", len(frozen))
    ctx.count("left out", sum(left_out.values()))
    ctx.log(f"{len(frozen)} items in {len(files)} subset(s) -> {target}")
    return rows


def _check_settings(
    format: str, p2: str | None, default_subset: str, subset: str | None, id: str | None
) -> None:
    if format not in FORMATS:
        raise LexsemError(f"freeze: format must be one of {', '.join(FORMATS)}, not {format!r}")
    if format == "sugarcrepe" and p2 is not None:
        raise LexsemError("freeze: format 'sugarcrepe' is pairs: it takes no `p2` column")
    if not SUBSET_NAME.match(default_subset):
        raise LexsemError(f"freeze: default_subset {default_subset!r} is not a file name")
    if format == "visla" and id is not None:
        raise LexsemError("freeze: format 'visla' numbers its items by row: it takes no `id`")
    if format == "bivlc" and (p2 is not None or subset is not None or id is not None):
        raise LexsemError(
            "freeze: format 'bivlc' is quads in one file: it takes no `p2`, `subset` or `id` "
            "(its subsets are `<type>_<subtype>`, its ids the row numbers)"
        )


def _columns(
    format: str, p1: str, p2: str | None, n: str, image: str | None, negative_image: str,
    type: str, subtype: str,
) -> dict[str, str | None]:  # fmt: skip
    """The columns `format` reads, by the role each plays."""
    if format == "bivlc":
        return {"p1": p1, "n": n, "image": image or "image", "negative_image": negative_image,
                "type": type, "subtype": subtype}  # fmt: skip
    triplets = format in ("scpp", "visla")
    return {"p1": p1, "p2": (p2 or "p2") if triplets else None, "n": n, "image": image}


def _category_names(
    rows: Any, fmt: str, cols: dict[str, str | None], subset: str | None, default_subset: str
) -> list[Any]:
    """Each row's category (its subset), rejected rows included: the card counts every
    category the rows name, those with no item left too."""
    if fmt == "bivlc":
        types = _column(rows, cols["type"] or "type", "type")
        subtypes = _column(rows, cols["subtype"] or "subtype", "subtype")
        return [f"{t}_{s}" if isinstance(t, str) and isinstance(s, str) else None
                for t, s in zip(types, subtypes, strict=True)]  # fmt: skip
    return _column(rows, subset, "subset") if subset else [default_subset] * rows.num_rows


def _left_out(rows: Any) -> dict[str, int]:
    """The rejected rows' count per reason, most frequent first."""
    reasons = rows[REJECTED].to_pylist() if REJECTED in rows.column_names else []
    return dict(Counter(r for r in reasons if r is not None).most_common())


def _write_subsets(
    format: str, subsets: dict[str, list[dict[str, Any]]], folder: Path
) -> list[dict[str, Any]]:
    """Each subset's file written into `folder`; the card's ``files`` rows."""
    files = []
    for name in sorted(subsets):
        suffix = ".tsv" if format == "visla" else ".json"
        path = folder / (BIVLC_FILE if format == "bivlc" else f"{name}{suffix}")
        if format == "bivlc":
            _write_bivlc(subsets[name], path)
        else:
            _write_items(format, subsets[name], path)
        files.append({"subset": name, "file": path.name, "sha256": file_sha256(path),
                      "items": len(subsets[name])})  # fmt: skip
    return files


def _sources(frozen: list[dict[str, Any]], licences: dict[str, str]) -> list[dict[str, Any]]:
    """The card's ``sources`` rows: items and licence per source."""
    by_source = Counter(it["source"] for it in frozen)
    return [
        {"source": s, "items": c, "licence": licences.get(s)} for s, c in sorted(by_source.items())
    ]


def _write_card(card: dict[str, Any], folder: Path) -> None:
    with open(folder / CARD_JSON, "w", encoding="utf-8") as fh:
        json.dump(card, fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
    (folder / CARD_MD).write_text(card_markdown(card), encoding="utf-8")


def _swap_in(out: Path, write: Callable[[Path], _T]) -> _T:
    """`write` fills a new folder, then it replaces ``out/benchmark`` whole (what `write`
    returns is returned); a failure leaves the old one as it was."""
    new = out / f".{BENCHMARK_DIR}.new"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)
    try:
        made = write(new)
        replace_dir(new, out / BENCHMARK_DIR, out / f".{BENCHMARK_DIR}.old")
    finally:
        shutil.rmtree(new, ignore_errors=True)
    return made


def _reads(
    have: frozenset[str], *, format: str = "scpp", p1: str = "p1", p2: str | None = None,
    n: str = "n", **_: Any,
) -> Columns:  # fmt: skip
    """The text columns a freeze needs (the image, ids and subsets are checked as it runs)."""
    texts = {"p1": p1, "n": n}
    if format in ("scpp", "visla"):
        texts["p2"] = p2 or "p2"
    return Columns(texts)


STAGE = Stage("freeze", freeze, columns=_reads)

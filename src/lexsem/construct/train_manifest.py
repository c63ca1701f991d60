"""Stage `train_manifest`: a build's accepted rows as a training manifest for `lexsem train`
(`lexsem.train.manifest`), divided 80/20 into training and validation rows as BiVLC divided
TROHN-Text and TROHN-Img (BiVLC, §5.1 and §5.2: "we divided the instances ... randomly into
80% for training and 20% for validation"; App. E.2).

BiVLC's released code does not hold the split of the TROHN datasets (they are published
already split); its fine-tuning script divides COCO with `datasets`'
``Dataset.train_test_split(test_size=0.2, seed=42)`` (``src/CLIP_fine_tuning/
CLIP_fine_tuning.py``, ``--seed`` 42). This stage divides the instances the same way:
`lexsem.train.validation.held_out_split` (the permutation ``train_test_split`` draws), one
instance per accepted row, so rows of one image may fall on both sides, as in BiVLC's split
of COCO by caption. The manifest lists the training rows, then the validation rows
(``split = "dev"``), each in the order ``train_test_split`` gives them, so
``--select val_in_batch_acc`` validates on the batches BiVLC's script would.

A row is one instance:

- TROHN-Text (no `negative_image_column`): ``image``, ``caption`` and ``negatives =
  [negative caption]`` (one image, two captions);
- TROHN-Img (`negative_image_column`: a path relative to the build folder, what
  `select_best_image` writes): also ``negative_image = manifest:<path>`` and
  ``negative_image_caption`` = the negative caption (two images, two captions).

The manifest is written to ``<build folder>/<name>.jsonl`` (or ``.parquet``), beside the
generated images so that ``manifest:`` references resolve; its record
``<build folder>/<name>.json`` holds its sha256, rows per split, the split's seed and fraction
and the command that trains on it, which the stage also prints. An accepted row whose negative
caption is missing, or equal to its caption (the manifest refuses it), or (TROHN-Img) that has
no negative image, is rejected (``no negative caption``, ``negative equals caption``, ``no
negative image``); a negative image outside the build folder or missing is a `DataError`
naming the row's ``source_id``. The output rows gain ``split``
(``train`` / ``dev``; null for a rejected row).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from lexsem.atomic import atomic_open
from lexsem.construct.images import build_image
from lexsem.construct.stage import Stage, StageContext, accepted, reject
from lexsem.errors import DataError
from lexsem.images.refs import unsafe_reason
from lexsem.train.manifest import MANIFEST_ROOT, Example, manifest_sha256, write_manifest
from lexsem.train.validation import held_out_split

__all__ = ["FORMATS", "train_command", "train_manifest"]

FORMATS = ("jsonl", "parquet")
_PRESETS = {"text": "bivlc-trohn-text", "img": "bivlc-trohn-img"}


def train_command(manifest: Path, kind: str, coco_train2017: str | None) -> str:
    """The `lexsem train` command line for a manifest written by this stage."""
    folder = coco_train2017 or "COCO/train2017"
    return (
        f"lexsem train --preset {_PRESETS[kind]} --manifest {manifest} "
        f"-o runs/trohn-{kind} --coco-train2017 {folder} --select val_in_batch_acc"
    )


def _column(rows: pa.Table, name: str, setting: str) -> list[Any]:
    if name not in rows.column_names:
        raise DataError(
            f"train_manifest: the rows have no column {name!r} ({setting}); they have "
            f"{', '.join(rows.column_names)}"
        )
    return rows[name].to_pylist()


def _negative_ref(base: Path, rel: Any, item: str) -> str:
    build_image(base, rel, item, "negative image")
    return f"{MANIFEST_ROOT}:{rel}"


def _coco_folder(rows: pa.Table, keep: list[int], images: list[Any]) -> str | None:
    """The COCO train2017 folder of the rows' images, when the input named it (the
    ``image_path`` column of the `coco_captions` source) and it is one folder."""
    if "image_path" not in rows.column_names or not keep:
        return None
    paths = rows["image_path"].to_pylist()
    folders = {str(Path(paths[r]).parent) for r in keep if paths[r]}
    roots = {str(images[r]).split(":", 1)[0] for r in keep}
    return folders.pop() if len(folders) == 1 and roots == {"train2017"} else None


def _check_settings(name: str, format: str, val_fraction: float) -> None:
    if format not in FORMATS:
        raise DataError(f"train_manifest: format must be one of {', '.join(FORMATS)}")
    if not isinstance(name, str) or unsafe_reason(name) is not None or "/" in name:
        raise DataError(f"train_manifest: name must be a file name, not {name!r}")
    if not 0.0 < val_fraction < 1.0:
        raise DataError(f"train_manifest: val_fraction must be in (0, 1), not {val_fraction}")


@dataclass
class _Usable:
    """Which accepted rows make instances: their row numbers (`keep`), each TROHN-Img row's
    negative image reference (`refs`), and the rejection reason of each row (None: kept)."""

    keep: list[int]
    refs: dict[int, str]
    reasons: list[str | None]


def _usable(
    rows: pa.Table, base: Path, captions: list[Any], negatives: list[Any],
    neg_images: list[Any] | None,
) -> _Usable:  # fmt: skip
    """The accepted rows that make instances; the others get their reason (module doc)."""
    ids = [str(i) for i in rows["source_id"].to_pylist()]
    out = _Usable([], {}, [None] * rows.num_rows)
    for r, ok in enumerate(accepted(rows).to_pylist()):
        if not ok:
            continue
        neg = negatives[r]
        if not isinstance(neg, str) or not neg.strip():
            out.reasons[r] = "no negative caption"
        elif neg == captions[r]:
            out.reasons[r] = "negative equals caption"
        elif neg_images is not None and not neg_images[r]:
            out.reasons[r] = "no negative image"
        else:
            if neg_images is not None:
                out.refs[r] = _negative_ref(base, neg_images[r], ids[r])
            out.keep.append(r)
    return out


def _split(keep: list[int], val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(training, validation) positions in `keep`, as `train_test_split` draws them."""
    if len(keep) < 2:
        raise DataError(f"train_manifest: {len(keep)} usable row(s); a split needs at least 2")
    try:
        return held_out_split(len(keep), val_fraction, seed)
    except ValueError as exc:
        raise DataError(f"train_manifest: {exc}") from None


def _examples(
    usable: _Usable, parts: tuple[list[int], list[int]], images: list[Any],
    captions: list[Any], negatives: list[Any], kind: str, n_rows: int,
) -> tuple[list[Example], list[str | None]]:  # fmt: skip
    """The manifest's examples (training, then validation) and each row's split."""
    splits: list[str | None] = [None] * n_rows
    examples: list[Example] = []
    for split, positions in zip(("train", "dev"), parts, strict=True):
        for p in positions:
            r = usable.keep[p]
            splits[r] = split
            if kind == "text":
                examples.append(Example(images[r], captions[r], (negatives[r],), split=split))
            else:
                examples.append(
                    Example(
                        images[r],
                        captions[r],
                        negative_image=usable.refs[r],
                        negative_image_caption=negatives[r],
                        split=split,
                    )
                )
    return examples, splits


def _write_record(out: Path, name: str, record: dict[str, Any]) -> None:
    with atomic_open(out / f"{name}.json", encoding="utf-8") as fh:
        json.dump(record, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def _with_split(rows: pa.Table, splits: list[str | None]) -> pa.Table:
    """`rows` with the column ``split`` (replaced where it is there)."""
    column = pa.array(splits, pa.string())
    if "split" in rows.column_names:
        return rows.set_column(rows.column_names.index("split"), "split", column)
    return rows.append_column("split", column)


def train_manifest(
    rows: pa.Table,
    ctx: StageContext | None,
    *,
    name: str = "manifest",
    format: str = "jsonl",
    val_fraction: float = 0.2,
    seed: int = 42,
    image_column: str = "image",
    caption_column: str = "caption",
    negative_column: str = "negative_caption",
    negative_image_column: str | None = None,
) -> pa.Table:
    """Write the accepted rows as a manifest (see the module doc); returns the rows with
    ``split``."""
    if ctx is None:
        raise DataError("train_manifest writes into the build folder: it needs a StageContext")
    _check_settings(name, format, val_fraction)
    images = _column(rows, image_column, "image_column")
    captions = _column(rows, caption_column, "caption_column")
    negatives = _column(rows, negative_column, "negative_column")
    kind = "text" if negative_image_column is None else "img"
    neg_images = (
        _column(rows, negative_image_column, "negative_image_column")
        if negative_image_column is not None
        else None
    )
    usable = _usable(rows, ctx.out, captions, negatives, neg_images)
    train_pos, dev_pos = _split(usable.keep, val_fraction, seed)
    examples, splits = _examples(
        usable, (train_pos, dev_pos), images, captions, negatives, kind, rows.num_rows
    )
    path = write_manifest(ctx.out / f"{name}.{format}", examples)
    digest = manifest_sha256(path)
    command = train_command(path, kind, _coco_folder(rows, usable.keep, images))
    _write_record(ctx.out, name, {
        "manifest": path.name,
        "format": format,
        "sha256": digest,
        "kind": f"trohn_{kind}",
        "rows": len(examples),
        "splits": {"train": len(train_pos), "dev": len(dev_pos)},
        "val_fraction": val_fraction,
        "seed": seed,
        "split": "datasets' train_test_split(test_size=val_fraction, seed=seed) over the rows",
        "train": command,
    })  # fmt: skip
    ctx.count("train rows", len(train_pos))
    ctx.count("dev rows", len(dev_pos))
    ctx.log(f"manifest {path} (sha256 {digest}): {len(train_pos)} train, {len(dev_pos)} dev rows")
    ctx.log(f"train on it: {command}")
    return reject(_with_split(rows, splits), usable.reasons)


STAGE = Stage("train_manifest", train_manifest)

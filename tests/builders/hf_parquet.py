"""Parquet files in the Hugging Face datasets formats (BiVLC, Winoground, ARO), with image cells."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from builders.backends import require_module
from lexsem.benchmarks.sources import hf_load

IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def png(color: tuple[int, int, int], size: tuple[int, int] = (8, 6)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def image_cell(data: bytes | None, path: str | None = None) -> dict[str, Any]:
    return {"bytes": data, "path": path}


def hf_feature(t: pa.DataType) -> Any:
    """The `datasets` feature JSON of a plain Arrow type (what it stores in parquet metadata)."""
    if pa.types.is_struct(t):
        return {t.field(i).name: hf_feature(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_list(t):
        return {"feature": hf_feature(t.value_type), "_type": "List"}
    dtype = {"float": "float32", "double": "float64"}.get(str(t), str(t))
    return {"dtype": dtype, "_type": "Value"}


def write_parquet(path: Path, columns: dict[str, list[Any]], *, row_group_size: int = 2) -> None:
    """A parquet file the way `datasets` writes one (Image columns as {bytes, path} structs)."""
    arrays, features = {}, {}
    for name, values in columns.items():
        first = next((v for v in values if v is not None), None)
        if isinstance(first, dict) and set(first) == {"bytes", "path"}:
            arrays[name] = pa.array(values, type=IMAGE_TYPE)
            features[name] = {"_type": "Image"}
        else:
            arrays[name] = pa.array(values)
            features[name] = hf_feature(arrays[name].type)
    table = pa.table(arrays)
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    table = table.replace_schema_metadata(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)


BIVLC_ROWS = [
    ("A man throwing a ball.", "A ball throwing a man.", "swap", "obj"),
    ("A red car.", "A blue car.", "replace", "att"),
    ("A dog on a sofa.", "A dog and a cat on a sofa.", "add", "obj"),
    ("A cup on a table.", "A cup under a table.", "replace", "rel"),
    ("Two kids.", "Two kids and a kite.", "add", "att"),
]


def bivlc_columns(rows=BIVLC_ROWS) -> dict[str, list[Any]]:
    n = len(rows)
    return {
        "image": [image_cell(png((10 * k, 0, 0))) for k in range(n)],
        "caption": [r[0] for r in rows],
        "negative_caption": [r[1] for r in rows],
        "negative_image": [image_cell(png((0, 10 * k, 0), (5, 5))) for k in range(n)],
        "type": [r[2] for r in rows],
        "subtype": [r[3] for r in rows],
    }


def write_bivlc(root: Path) -> dict[str, list[Any]]:
    """Two shards of the test split (3 + 2 rows, row groups of 2) and a train-split decoy."""
    cols = bivlc_columns()
    first = {k: v[:3] for k, v in cols.items()}
    second = {k: v[3:] for k, v in cols.items()}
    write_parquet(root / "data" / "test-00000-of-00002.parquet", first)
    write_parquet(root / "data" / "test-00001-of-00002.parquet", second)
    decoy = {k: v[:1] for k, v in bivlc_columns([("x", "y", "add", "obj")]).items()}
    write_parquet(root / "data" / "train-00000-of-00001.parquet", decoy)
    return cols


def winoground_columns() -> dict[str, list[Any]]:
    return {
        "id": [0, 1, 2],
        "image_0": [image_cell(png((1, 2, k))) for k in range(3)],
        "image_1": [image_cell(png((3, 4, k))) for k in range(3)],
        "caption_0": ["an old person kisses a young person", "the dog bit the man", "a b c"],
        "caption_1": ["a young person kisses an old person", "the man bit the dog", "c b a"],
        "tag": ["Noun", "Relation", "Object"],
        "secondary_tag": ["", "Symbolic", "Pragmatics"],
        "num_main_preds": [1, 1, 2],
        "collapsed_tag": ["Object", "Relation", "Both"],
    }


def vg_relation_columns() -> dict[str, list[Any]]:
    big = [png((k, 100, 200), (40, 30)) for k in range(3)]
    return {
        "image": [image_cell(b) for b in big],
        "true_caption": ["the horse is eating the grass", "the cup is on the table", "x on y"],
        "false_caption": ["the grass is eating the horse", "the table is on the cup", "y on x"],
        "relation_name": ["eating", "on", "on"],
        "bbox": [
            {"x": 2.0, "y": 3.0, "w": 10.0, "h": 7.0},
            {"x": 0.0, "y": 0.0, "w": 40.0, "h": 30.0},
            {"x": 5.4, "y": 1.6, "w": 9.0, "h": 20.0},  # PIL rounds the float box
        ],
    }


def vg_attribution_columns() -> dict[str, list[Any]]:
    cols = vg_relation_columns()
    del cols["relation_name"]
    cols["true_caption"] = ["the white dog and the black cat"] * 3
    cols["false_caption"] = ["the black dog and the white cat"] * 3
    cols["attributes"] = [["white", "black"], ["red", "blue"], ["white", "black"]]
    return cols


def order_columns(n: int = 4) -> dict[str, list[Any]]:
    return {
        "images": [image_cell(png((k, k, k))) for k in range(n)],
        "correct_caption": [f"a man riding a horse {k}" for k in range(n)],
        **{
            f"hard_text_{j}": [f"horse a riding man a {k} {j}" for k in range(n)]
            for j in (1, 2, 3, 4)
        },
    }


def _no_network(monkeypatch) -> None:
    monkeypatch.delenv("LEXSEM_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(hf_load, "stored_token", lambda: None)


def _parquet_loader(files: list[Path], cache: Path, calls: list[dict[str, Any]]):
    datasets = require_module("datasets")

    def load(repo, **kwargs):
        calls.append({"repo": repo, **kwargs})
        return datasets.load_dataset(
            "parquet", data_files=[str(f) for f in files], split="train", cache_dir=str(cache)
        )

    return load

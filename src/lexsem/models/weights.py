"""Has a loaded model's weights changed since it was loaded? (A training loop evaluating the
same model object every epoch must never read the cache entries of an earlier state.)

PyTorch counts in-place writes to every tensor (`Tensor._version`: an optimizer step, a
`load_state_dict`, a manual `mul_` all bump it). The state of a model is the list of
(identity, version) of its parameters and buffers: cheap to read, so it is checked at every
fingerprint. Only when it differs from the state at load time is the content hashed, and the
digest joins the fingerprint (`weights`), so each trained state has its own cache entries and
the same weights give the same key again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

State = tuple[tuple[int, int], ...]


def _modules(obj: Any, depth: int = 0) -> Iterator[Any]:
    """The torch modules inside a loaded model (a module, a tuple/list/dict of them, or an
    object holding one in `.model`)."""
    if obj is None or depth > 2:
        return
    if hasattr(obj, "named_parameters") and hasattr(obj, "buffers"):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _modules(x, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _modules(x, depth + 1)
    elif hasattr(obj, "model"):
        yield from _modules(obj.model, depth + 1)


def _tensors(obj: Any) -> Iterator[Any]:
    for module in _modules(obj):
        yield from module.parameters()
        yield from module.buffers()


def weights_state(obj: Any) -> State:
    """(id, in-place write count) of every parameter and buffer: changes when weights do."""
    return tuple((id(t), int(t._version)) for t in _tensors(obj))


def weights_digest(obj: Any) -> str:
    """sha256 of every parameter and buffer's bytes, in module order: the weights as loaded in
    memory (a folder's weight files on disk: `lexsem.models.source.weight_files_digest`)."""
    import torch

    h = hashlib.sha256()
    for t in _tensors(obj):
        data = t.detach().contiguous().cpu()
        h.update(str((tuple(data.shape), str(data.dtype))).encode())
        h.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()

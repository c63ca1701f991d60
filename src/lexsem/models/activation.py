"""The activation a model spec runs (`QuickGELU` or `GELU`), said without building the model:
what the spec's backend answers through its optional `spec_activation(spec)` (open_clip: the
spec's `quick_gelu`, else the table of facts of its backend's `trained_activation.py`); None
for a backend that says nothing, or a spec its backend cannot answer for without building it
(a local checkpoint)."""

from __future__ import annotations

from lexsem.models.backend_registry import get_backend
from lexsem.models.spec import ModelSpec, parse_model_spec

__all__ = ["spec_activation"]


def spec_activation(spec: str | ModelSpec) -> str | None:
    """`QuickGELU`, `GELU` or None (module doc)."""
    parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
    answer = getattr(get_backend(parsed.backend), "spec_activation", None)
    return None if answer is None else answer(parsed)

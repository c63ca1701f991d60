"""What a run says of its model and benchmark, as the leaderboard shows and filters it: the
benchmark's family, the model's family (its backend), size (parameters, where the run records
them), text-only or image-text, dtype, a file-safe id, and the `lexsem eval` command that runs
it again (made from its recorded settings)."""

from __future__ import annotations

import hashlib
import re
import shlex
from typing import Any

from lexsem.config import EvalConfig
from lexsem.results.schema import RunRecord

__all__ = [
    "FAMILIES",
    "benchmark_family",
    "modality",
    "model_family",
    "model_id",
    "parameters",
    "rerun_command",
    "size_class",
]

# the overview's sections, in this order; a benchmark of none of them gets its own section
FAMILIES = (
    "SugarCrepe++", "VISLA", "SugarCrepe", "BiVLC", "Winoground", "ARO", "Blind priors",
)  # fmt: skip
_BY_NAME = {
    "sugarcrepe_pp": "SugarCrepe++", "visla_generic": "VISLA", "visla_spatial": "VISLA",
    "sugarcrepe": "SugarCrepe", "sugarcrepe_gpt4v": "SugarCrepe", "bivlc": "BiVLC",
    "winoground": "Winoground", "aro_vg": "ARO", "aro_order": "ARO",
}  # fmt: skip
TEXT_TASKS = frozenset({"tot", "t2t", "blind"})  # tasks a text-only model runs
# fingerprint keys where a backend records its number of parameters
PARAM_KEYS = ("parameters", "n_params", "num_params", "params")
# the settings that `lexsem eval` takes and that a run records, beside model and benchmarks
RERUN_OPTIONS = (
    "tie_policy", "seed", "n_boot", "confidence", "dtype", "skip_bad_images",
    "max_image_pixels", "exif_transpose", "answer_rule",
)  # fmt: skip


def benchmark_family(benchmark: str, task: str) -> str:
    """The overview section of a benchmark's task: a blind (text prior) task is "Blind
    priors" whatever its benchmark; a user's file (`scpp:PATH`) goes with its format."""
    if task == "blind":
        return "Blind priors"
    name = benchmark.partition(":")[0]
    if name == "scpp":
        return "SugarCrepe++"
    if name == "visla":
        return "VISLA"
    return _BY_NAME.get(name, benchmark)


def model_family(record: RunRecord) -> str:
    """The model's backend (its fingerprint's, else the spec's `BACKEND:` prefix)."""
    backend = record.model.fingerprint.get("backend")
    if isinstance(backend, str) and backend:
        return backend
    head, sep, _ = record.model.spec.partition(":")
    return head if sep and "/" not in head else "other"


def parameters(record: RunRecord) -> int | None:
    """The model's number of parameters where its run records it, else None."""
    for key in PARAM_KEYS:
        value = record.model.fingerprint.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def size_class(params: int | None) -> str:
    if params is None:
        return "unknown"
    for bound, label in ((10**8, "<100M"), (10**9, "100M-1B"), (10**10, "1B-10B")):
        if params < bound:
            return label
    return ">10B"


def modality(record: RunRecord) -> str:
    """Whether the run is "text-only" (every task of the run reads text only) or "image-text"."""
    tasks = {r.task for r in record.results} or set(record.config.tasks)
    return "text-only" if tasks and tasks <= TEXT_TASKS else "image-text"


def model_id(name: str) -> str:
    """A file name for a model's page: its name made safe, and 8 hex digits of its sha256 so
    that two names that look alike once made safe stay apart."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "model"
    return f"{slug}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _flag(field: str, value: Any) -> list[str]:
    option = "--" + field.replace("_", "-")
    if isinstance(value, bool):
        return [option if value else f"--no-{field.replace('_', '-')}"]
    return [option, str(value)]


def rerun_command(record: RunRecord) -> str:
    """The `lexsem eval` command that runs the model again on the same benchmarks and tasks
    with the run's recorded settings (those differing from the defaults); the data folders
    are the reader's own, so none is given."""
    evaluation = record.config.evaluation
    benchmarks = evaluation.get("benchmarks") or [b.name for b in record.benchmarks]
    words = ["lexsem", "eval", "--model", record.model.spec]
    for bench in benchmarks:
        words += ["--benchmark", str(bench)]
    for task in evaluation.get("tasks") or []:
        words += ["--task", str(task)]
    if record.model.name != record.model.spec:
        words += ["--name", record.model.name]
    for field in RERUN_OPTIONS:
        if field not in evaluation:
            continue
        value = evaluation[field]
        if value is not None and value != EvalConfig.model_fields[field].default:
            words += _flag(field, value)
    return shlex.join(words)

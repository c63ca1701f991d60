"""One label per run, the same in every table, figure and note of a report.

A run is shown under its model's name (`--name`, else the model spec). A spec that is a long
local path (`clip:/tmp/exp/2026-05-01/checkpoints/lr1e-6/epoch-10`, more than 40 characters)
is shown by its backend and its last two folders, `clip:…/lr1e-6/epoch-10`, unless two models
would then look alike; the whole spec is in the Runs table. The label grows only as far as it
must to tell runs apart:

- runs of different models that share a name get the spec in brackets when that tells them
  apart (`clip [clip:/models/a]`), else the first 8 characters of the model fingerprint
  (`clip [66ef0d3b]`);
- runs of one model (one label after the step above) that share a benchmark — two of them
  would stand side by side in one table — are named by the evaluation settings that differ
  between them, as Hydra names runs (`minilm tie_policy=lenient`, `minilm seed=1 n_boot=0`;
  where the runs were kept, which folders they read and how fast they ran are no such
  setting); runs whose settings are all the same get the first 8 characters of their run id
  in parentheses (`minilm (27a63f05)`). Runs of one model on different benchmarks keep the
  plain label: each table has one row of that model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lexsem.results.schema import RunRecord

LONG_SPEC = 40  # characters: a spec longer than this that is a path is shown shortened
# evaluation settings that say where a run read and kept things or how fast it ran, never what
# it measured: never part of a label
NOT_SHOWN = frozenset(
    {
        "benchmarks", "name", "cache_dir", "data_dir", "image_root", "coco_val2017",
        "coco_train2017", "use_cache", "progress", "num_workers", "keep_decoded_mb",
        "concurrency", "offline",
    }
)  # fmt: skip


def short_spec(spec: str) -> str:
    """A long path spec as its backend and its last two folders (`clip:…/lr1e-6/epoch-10`);
    any other spec as it is."""
    if len(spec) <= LONG_SPEC or "/" not in spec or "?" in spec or "://" in spec:
        return spec
    backend, sep, path = spec.rpartition(":") if ":" in spec.split("/", 1)[0] else ("", "", spec)
    parts = [p for p in path.split("/") if p]
    if len(parts) <= 2:
        return spec
    return f"{backend}{sep}…/{'/'.join(parts[-2:])}"


def _shown_names(runs: Sequence[RunRecord]) -> dict[str, str]:
    """model name -> the name shown: `short_spec` of a name that is its spec, unless two
    names would then look alike."""
    names = {r.model.name: r.model.name == r.model.spec for r in runs}
    short = {n: short_spec(n) if is_spec else n for n, is_spec in names.items()}
    taken: dict[str, int] = {}
    for shown in short.values():
        taken[shown] = taken.get(shown, 0) + 1
    return {n: s if taken[s] == 1 else n for n, s in short.items()}


def _model_labels(runs: Sequence[RunRecord]) -> dict[str, str]:
    """run id -> the model's label: its name, told apart from other models of that name."""
    shown = _shown_names(runs)
    by_name: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_name.setdefault(r.model.name, []).append(r)
    out: dict[str, str] = {}
    for full, group in by_name.items():
        name = shown[full]
        keys = list(dict.fromkeys(r.model.fingerprint_key for r in group))
        specs = {r.model.fingerprint_key: r.model.spec for r in group}
        distinct_specs = len(set(specs.values())) == len(keys)
        for r in group:
            if len(keys) == 1:
                out[r.run_id] = name
            elif distinct_specs and r.model.spec != name:
                out[r.run_id] = f"{name} [{r.model.spec}]"
            else:
                out[r.run_id] = f"{name} [{r.model.fingerprint_key[:8]}]"
    return out


def _overlap(runs: Sequence[RunRecord]) -> bool:
    """Whether two of the runs share a benchmark."""
    seen: set[str] = set()
    for r in runs:
        names = {b.name for b in r.benchmarks}
        if seen & names:
            return True
        seen |= names
    return False


def run_labels(runs: Sequence[RunRecord]) -> dict[str, str]:
    """run id -> the label the report shows that run under (see the module docstring); runs
    given twice (one run id) are one run."""
    unique: list[RunRecord] = []
    for r in runs:
        if all(r.run_id != u.run_id for u in unique):
            unique.append(r)
    model = _model_labels(unique)
    by_label: dict[str, list[RunRecord]] = {}
    for r in unique:
        by_label.setdefault(model[r.run_id], []).append(r)
    out: dict[str, str] = {}
    for lab, group in by_label.items():
        if len(group) < 2 or not _overlap(group):
            out |= {r.run_id: lab for r in group}
            continue
        named = {r.run_id: " ".join([lab, *_varied(group)[r.run_id]]) for r in group}
        taken = [named[r.run_id] for r in group]
        for r in group:
            same = taken.count(named[r.run_id]) > 1
            out[r.run_id] = f"{named[r.run_id]} ({r.run_id[:8]})" if same else named[r.run_id]
    return out


def _value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(_value(v) for v in value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _varied(group: Sequence[RunRecord]) -> dict[str, list[str]]:
    """run id -> `key=value` of each evaluation setting whose value differs in `group`."""
    settings = [r.config.evaluation for r in group]
    keys = sorted({k for s in settings for k in s} - NOT_SHOWN)
    varied = [k for k in keys if len({json.dumps(s.get(k), sort_keys=True) for s in settings}) > 1]
    return {
        r.run_id: [f"{k}={_value(s.get(k))}" for k in varied]
        for r, s in zip(group, settings, strict=True)
    }


def labels_for(runs: Sequence[RunRecord]) -> list[str]:
    """The label of each run, in order (see `run_labels`)."""
    labels = run_labels(runs)
    return [labels[r.run_id] for r in runs]


LABEL_RULE = (
    "Each run is shown under its model's name (--name, else the model spec; a long local path "
    "by its backend and last two folders); two runs of one model on the same benchmark are "
    "told apart by the settings that differ between them (tie_policy=lenient), and where none "
    "differs the first 8 characters of the run id are added in parentheses; the spec or "
    "fingerprint in brackets tells apart two models of one name."
)

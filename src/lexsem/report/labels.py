"""One label per run, the same in every table, figure and note of a report.

A run is shown under its model's name (`--name`, else the model spec). The label grows only
as far as it must to tell runs apart:

- runs of different models that share a name get the spec in brackets when that tells them
  apart (`clip [clip:/models/a]`), else the first 8 characters of the model fingerprint
  (`clip [66ef0d3b]`);
- runs of one model (one label after the step above) that share a benchmark — two of them
  would stand side by side in one table — all get the first 8 characters of their run id in
  parentheses (`minilm (27a63f05)`). Runs of one model on different benchmarks keep the plain
  label: each table has one row of that model.
"""

from __future__ import annotations

from collections.abc import Sequence

from lexsem.results.schema import RunRecord


def _model_labels(runs: Sequence[RunRecord]) -> dict[str, str]:
    """run id -> the model's label: its name, told apart from other models of that name."""
    by_name: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_name.setdefault(r.model.name, []).append(r)
    out: dict[str, str] = {}
    for name, group in by_name.items():
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
        apart = len(group) > 1 and _overlap(group)
        for r in group:
            out[r.run_id] = f"{lab} ({r.run_id[:8]})" if apart else lab
    return out


def labels_for(runs: Sequence[RunRecord]) -> list[str]:
    """The label of each run, in order (see `run_labels`)."""
    labels = run_labels(runs)
    return [labels[r.run_id] for r in runs]


LABEL_RULE = (
    "Each run is shown under its model's name (--name, else the model spec); the first 8 "
    "characters of the run id are added in parentheses only to tell apart two runs of one "
    "model on the same benchmark, and the spec or fingerprint in brackets only to tell apart "
    "two models of one name."
)

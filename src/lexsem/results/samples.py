"""Runs that answer a sample of a benchmark's items by design: a human study's run
(`lexsem.annotate.human_run`, model spec ``human:STUDY``). Such a run is paired with the
others on the items it answered (`lexsem.analysis.same_items`, `lexsem compare`), and every
number of it is shown with its n (`lexsem.report.tables`)."""

from __future__ import annotations

from lexsem.results.schema import RunRecord

__all__ = ["SAMPLE_BACKENDS", "answers_a_sample"]

SAMPLE_BACKENDS = ("human",)  # the model backends whose runs answer a sample of the items


def answers_a_sample(record: RunRecord) -> bool:
    """Whether the run of `record` answers a sample of the benchmark's items by design."""
    return record.model.fingerprint.get("backend") in SAMPLE_BACKENDS

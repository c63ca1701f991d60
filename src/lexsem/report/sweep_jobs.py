"""The jobs of a sweep without a run, in a report of the sweep (`lexsem report OUT`): each
failed job with its reason, and how many were not run yet. The text report says the same on
stderr (`lexsem.cli.run_paths`); the HTML page shows one section."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lexsem.report.html import Section
from lexsem.report.tables import Table

__all__ = ["MissingJob", "missing_lines", "sweep_jobs_section"]


@dataclass(frozen=True)
class MissingJob:
    """A job of a sweep that has no run: `failed` (with its error) or `pending`."""

    id: str
    status: str
    error: str | None = None


def missing_lines(folder: str, jobs: Sequence[MissingJob], total: int) -> list[str]:
    """One line saying how many jobs have no run, then one line per failed job and its
    reason."""
    if not jobs:
        return []
    failed = [j for j in jobs if j.status == "failed"]
    pending = len(jobs) - len(failed)
    lines = [
        f"note: {folder}: {len(jobs)} of {total} jobs have no run ({len(failed)} failed, "
        f"{pending} not run yet); reported without them"
    ]
    lines += [f"failed: {j.id}: {j.error or 'no reason recorded'}" for j in failed]
    return lines


def sweep_jobs_section(folder: str, jobs: Sequence[MissingJob], total: int) -> Section:
    """The section of the jobs without a run: failed ones with their reasons, then those not
    run yet."""
    failed = [j for j in jobs if j.status == "failed"]
    pending = [j for j in jobs if j.status != "failed"]
    text = (
        f"{len(jobs)} of the {total} jobs of the sweep {folder} have no run and are not in the "
        f"tables: {len(failed)} failed, {len(pending)} not run yet (run the sweep again to run "
        "them)."
    )
    rows = [[j.id, "failed", j.error or "no reason recorded"] for j in failed]
    rows += [[j.id, "not run yet", ""] for j in pending]
    return Section(
        title="Sweep jobs without a run",
        text=text,
        tables=[Table("Jobs without a run", ["job", "status", "reason"], rows)],
    )

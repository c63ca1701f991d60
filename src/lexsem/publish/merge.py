"""The rows of runs from several people, merged only where they compare (docs/publish.md,
"Merge rules"). A run gives one entry per benchmark and task it has results for; the board is
refused, one line per problem naming both runs, when:

- two runs of one model name have results for the same benchmark and task (a duplicate):
  `--replace` keeps the later run given instead, and says so in a line;
- two runs read a subset of one benchmark from files with different sha256
  (`lexsem.results.same_data.data_conflict`): their items are not the same items;
- two runs scored one benchmark with different settings that change hits (`SCORE_SETTINGS`).

Settings that change no hit are no conflict: the seed, resamples and confidence of the runs'
own intervals (the board computes its own), batch size, device, workers, folders, caching,
progress, request limits; the dtype is the model's (a column and a filter of the board, not a
conflict); the tasks are part of each row's key (two runs of different tasks share no row).
Each run is checked against the first run given (kept) on the same benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lexsem.config import EvalConfig
from lexsem.errors import LexsemError
from lexsem.publish.collect import Loaded
from lexsem.results.same_data import data_conflict

__all__ = ["SCORE_SETTINGS", "Entry", "Merged", "merge"]

# EvalConfig fields that change which items are right: how ties count, how multiple-choice
# answers are read, the demonstrations a chat model is shown, which items are scored at all
# (bad images skipped, the pixel limit) and how images are oriented
SCORE_SETTINGS = (
    "tie_policy", "answer_rule", "shots", "shot_seed", "skip_bad_images", "max_image_pixels",
    "exif_transpose",
)  # fmt: skip
MAX_LINES = 50  # refusal lines shown (then a count)


@dataclass(frozen=True)
class Entry:
    """One run's results for one benchmark and task."""

    run: Loaded
    benchmark: str
    task: str


@dataclass
class Merged:
    entries: list[Entry]
    said: list[str] = field(default_factory=list)  # what --replace did, a line each


def _setting(run: Loaded, name: str) -> Any:
    config = run.record.config
    if name == "tie_policy":
        return config.tie_policy
    if name == "answer_rule":  # recorded only by runs with a multiple-choice task
        return config.answer_rule
    return config.evaluation.get(name, EvalConfig.model_fields[name].default)


def _settings_conflict(a: Loaded, b: Loaded) -> str | None:
    diffs = []
    for name in SCORE_SETTINGS:
        va, vb = _setting(a, name), _setting(b, name)
        if name == "answer_rule" and (va is None or vb is None):
            continue
        if va != vb:
            diffs.append(f"{name} {va!r} vs {vb!r}")
    return ", ".join(diffs) or None


def _pairs(run: Loaded) -> list[tuple[str, str]]:
    return list(dict.fromkeys((r.benchmark, r.task) for r in run.record.results))


def merge(runs: Sequence[Loaded], *, replace: bool = False) -> Merged:
    """The entries of `runs` (in the order given), or a `LexsemError` listing every conflict
    (module doc)."""
    problems: list[str] = []
    said: list[str] = []
    kept: dict[tuple[str, str, str], Entry] = {}
    for run in runs:
        for bench, task in _pairs(run):
            key = (run.name, bench, task)
            before = kept.get(key)
            if before is not None and before.run.record.run_id == run.record.run_id:
                continue  # one run given twice
            if before is not None and not replace:
                problems.append(
                    f"{run.name!r} has results for {bench} ({task}) in two runs: "
                    f"{before.run.folder} and {run.folder}; give one, or --replace to keep "
                    "the later one"
                )
                continue
            if before is not None:
                said.append(
                    f"{run.name!r} on {bench} ({task}): {run.folder} replaces {before.run.folder}"
                    " (--replace: the later run wins)"
                )
            kept[key] = Entry(run, bench, task)
    entries = list(kept.values())
    first: dict[str, Entry] = {}
    checked: set[tuple[str, str]] = set()
    for e in entries:
        ref = first.setdefault(e.benchmark, e)
        pair = (e.run.digest, e.benchmark)
        if ref.run is e.run or pair in checked:
            continue
        checked.add(pair)
        data = data_conflict(ref.run.record, e.run.record, e.benchmark)
        if data is not None:
            problems.append(f"{e.run.folder} and {ref.run.folder}: {data}")
        settings = _settings_conflict(ref.run, e.run)
        if settings is not None:
            problems.append(
                f"{ref.run.folder} and {e.run.folder} scored {e.benchmark} with different "
                f"settings ({settings}, in that order): their hits do not compare"
            )
    if problems:
        more = len(problems) - MAX_LINES
        lines = problems[:MAX_LINES] + ([f"... and {more} more"] if more > 0 else [])
        raise LexsemError(
            f"{len(problems)} conflict{'s' * (len(problems) != 1)} between the runs; nothing "
            "was written:\n" + "\n".join(lines)
        )
    return Merged(entries, said)

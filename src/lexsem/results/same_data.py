"""Whether two runs scored the same benchmark content: each run records, per subset of each
benchmark, the file it read and that file's sha256 (`BenchmarkInfo.files`). Two runs are
comparable on a benchmark when every subset both hold was read from files with the same sha256:
two different user files that share a name (`scpp:a/data.json`, `scpp:b/data.json`), or two
versions of a pinned file, have item ids in common but not their items, so pairing their
per-item hits (McNemar) or putting their accuracies side by side would compare unlike things.

`data_conflict` says, in one sentence, why two runs are not comparable on a benchmark (both
files and their sha256 prefixes); `comparable_groups` splits runs into groups comparable within
(`lexsem report` shows each group in its own tables; `lexsem compare` refuses the benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence

from lexsem.results.schema import RunRecord

__all__ = ["comparable_groups", "data_conflict", "data_files"]

_PREFIX = 12  # sha256 characters shown


def data_files(record: RunRecord, benchmark: str) -> dict[str, tuple[str | None, str]]:
    """subset -> (file, sha256) of what `record` read for `benchmark` ({} when it has none)."""
    out: dict[str, tuple[str | None, str]] = {}
    for info in record.benchmarks:
        if info.name == benchmark:
            for f in info.files:
                out[f.subset] = (f.file, f.sha256)
    return out


def _where(record: RunRecord, file: str | None, sha: str) -> str:
    return f"{file or 'generated data'} (sha256 {sha[:_PREFIX]}) in the run of {record.model.name}"


def data_conflict(a: RunRecord, b: RunRecord, benchmarks: Sequence[str] | str) -> str | None:
    """Why `a` and `b` are not comparable on `benchmarks` (a name or several): the first subset
    both hold whose files differ, with both files and sha256 prefixes; None when comparable."""
    for bench in [benchmarks] if isinstance(benchmarks, str) else benchmarks:
        fa, fb = data_files(a, bench), data_files(b, bench)
        for subset in (s for s in fa if s in fb):
            (file_a, sha_a), (file_b, sha_b) = fa[subset], fb[subset]
            if sha_a != sha_b:
                return (
                    f"{bench}/{subset} was read from different data: {_where(a, file_a, sha_a)}, "
                    f"{_where(b, file_b, sha_b)}"
                )
    return None


def comparable_groups(
    runs: Sequence[RunRecord], benchmarks: Sequence[str] | str
) -> tuple[list[list[RunRecord]], list[str]]:
    """`runs` split into groups whose members are pairwise comparable on `benchmarks` (in
    first-seen order: each run joins the first group it is comparable with), and for each
    group after the first, why its first run is not comparable with the earlier groups."""
    groups: list[list[RunRecord]] = []
    why: list[str] = []
    for run in runs:
        reasons = []
        for group in groups:
            conflict = next((c for m in group if (c := data_conflict(m, run, benchmarks))), None)
            if conflict is None:
                group.append(run)
                break
            reasons.append(conflict)
        else:
            if groups:
                why.append(reasons[0])
            groups.append([run])
    return groups, why

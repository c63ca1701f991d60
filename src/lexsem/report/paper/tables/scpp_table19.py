"""SugarCrepe++ Table 19: generative VLMs scoring image-text pairs (SugarCrepe++, App. G.2), as
the report lays out runs: ITT of VGPTScore, VGPTScore Blind and VQAScore runs (the `vgpt:` and
`vqa:` backends) per subset of SugarCrepe (task `pair`) and SugarCrepe++ (task `itt`), in the
table's column order, each with its Avg (the mean of the five subsets); rows grouped by method,
then model (a model's runs on the two benchmarks make one row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.generative_runs import by_model, method_of
from lexsem.report.paper.layout import RunColumn, RunLayout, RunRow, benchmarks_of, plain_subsets
from lexsem.report.paper.tables.scpp import SUBSETS
from lexsem.report.tables import label
from lexsem.results.schema import RunRecord
from lexsem.stats.bootstrap import MACRO

ORDER = ("swap_obj", "replace_att", "replace_obj", "replace_rel", "swap_att")
BENCH_NAMES = {"sugarcrepe": "SugarCrepe", "sugarcrepe_pp": "SugarCrepe++"}
# (task, metric): ITT of a pair (SugarCrepe) and of a triplet (SugarCrepe++)
GROUPS = (("pair", "acc"), ("itt", "itt"))


def _columns(records: Sequence[RunRecord], bench: str) -> list[RunColumn]:
    gen = [r for runs in by_model(records).values() for r in runs]
    out = []
    for task, metric in GROUPS:
        for b in benchmarks_of(gen, [task]):
            subsets = plain_subsets(gen, b, [task], ORDER)
            if any(s in ORDER for s in subsets):  # as the paper: its five subsets only
                subsets = [s for s in subsets if s in ORDER]
            shown = BENCH_NAMES.get(b, b)
            out += [RunColumn(f"{shown} {SUBSETS.get(s, label(s))}", b, s, task, metric)
                    for s in subsets]  # fmt: skip
            out.append(RunColumn(f"{shown} Avg", b, MACRO, task, metric, mean_of=tuple(subsets)))
    return out


def _method_rank(method: str) -> int:
    for k, prefix in enumerate(("VGPTScore Blind", "VGPTScore", "VQAScore")):
        if method.startswith(prefix):
            return (1, 0, 2)[k]
    return 3


def _rows(records: Sequence[RunRecord], bench: str, labels: Mapping[str, str]) -> list[RunRow]:
    models = sorted(by_model(records).values(),
                    key=lambda rs: _method_rank(method_of(rs[0].model) or ""))  # fmt: skip
    return [
        RunRow(
            (method_of(runs[0].model) or "", labels[runs[0].run_id]),
            tuple(runs),
            labels[runs[0].run_id],
        )
        for runs in models
    ]


LAYOUT = RunLayout(
    cite="SugarCrepe++ Table 19",
    title="Generative VLMs, ITT per subset",
    lead=("method", "model"),
    columns=_columns,
    rows=_rows,
    note="ITT accuracy (%): SugarCrepe, the positive scored above the negative; SugarCrepe++, "
    "both positives above the negative. Columns in the table's order (its five subsets; "
    "SugarCrepe's add subsets are not in it); Avg: the mean of the row's subsets (the run's "
    "macro average, with its interval, when it has exactly these). Methods: the vgpt: "
    "backend's score=sum (VGPTScore) and blind (VGPTScore Blind, Gaussian-noise images), the "
    "vqa: backend (VQAScore).",
)

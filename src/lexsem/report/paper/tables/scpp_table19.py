"""SugarCrepe++ Table 19: generative VLMs scoring image-text pairs (SugarCrepe++, App. G.2), as
the report lays out runs: ITT of VGPTScore, VGPTScore Blind and VQAScore runs (the `vgpt:` and
`vqa:` backends) per subset of SugarCrepe (task `pair`) and SugarCrepe++ (task `itt`), in the
table's column order, each with its Avg (the mean of the five subsets); rows grouped by method,
then model (a model's runs on the two benchmarks make one row).

`TABLE`: the published numbers, one row per method and model (15 rows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.report.paper.generative_runs import by_model, method_of, model_row
from lexsem.report.paper.layout import RunColumn, RunLayout, RunRow, benchmarks_of, plain_subsets
from lexsem.report.paper.tables.scpp import PAPER, SUBSETS
from lexsem.report.tables import label
from lexsem.results.schema import RunRecord
from lexsem.stats.bootstrap import MACRO

ORDER = ("swap_obj", "replace_att", "replace_obj", "replace_rel", "swap_att")
BENCH_NAMES = {"sugarcrepe": "SugarCrepe", "sugarcrepe_pp": "SugarCrepe++"}
# (task, metric): ITT of a pair (SugarCrepe) and of a triplet (SugarCrepe++), in the order of
# `BENCH_NAMES`
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
    return [model_row(runs, labels, method_first=True) for runs in models]


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


# -- the published numbers ---------------------------------------------------------------------
# SugarCrepe's Avg is the mean of five of its seven subsets, which no run records (a run of
# `sugarcrepe` averages all seven): its cells are not stored; SugarCrepe++'s Avg is the run's
# macro average over its five subsets.
PUBLISHED_COLUMNS = (
    *(
        Column(benchmark=b, task=task, metric=metric, subset=s, header=f"{shown} {SUBSETS[s]}")
        for (b, shown), (task, metric) in zip(BENCH_NAMES.items(), GROUPS, strict=True)
        for s in ORDER
    ),
    Column(
        benchmark="sugarcrepe_pp", task="itt", metric="itt", subset=MACRO, header="SugarCrepe++ Avg"
    ),
)

# the paper's model name -> the checkpoint (it names none: these are the VQAScore reference's,
# t2v_metrics, for CLIP-FlanT5, InstructBLIP-Flan-T5-XXL and LLaVA-1.5, and ShareGPT4V's own)
MODELS = {
    "Clip-FlanT5-xl": "zhiqiulin/clip-flant5-xl",
    "Clip-FlanT5-xxl": "zhiqiulin/clip-flant5-xxl",
    "InstructBLIP": "Salesforce/instructblip-flan-t5-xxl",
    "Llava-v1.5-7b": "liuhaotian/llava-v1.5-7b",
    "ShareGPT4v-7b": "Lin-Chen/ShareGPT4V-7B",
}
METHODS = {
    "VGPTScore": "vgpt:{}",
    "VGPTScore Blind": "vgpt:{}?score=blind",
    "VQAScore": "vqa:{}",
}
_NOTE = {
    "InstructBLIP": "the paper names no checkpoint; this is the VQAScore reference's",
}
_VGPT_NOTE = (
    "the paper gives no prompt or normalisation for VGPTScore: lexsem's default "
    "(score=sum, `Describe the image.`); score=t2v is t2v_metrics' setting"
)

ROWS = tuple(
    ModelRow(
        name=f"{method} {model}",
        spec=spec.format(ckpt),
        note="; ".join(
            n for n in (_NOTE.get(model), _VGPT_NOTE if spec.startswith("vgpt:") else None) if n
        )
        or None,
    )
    for method, spec in METHODS.items()
    for model, ckpt in MODELS.items()
)

# SugarCrepe: Swap Object, Replace Attribute, Replace Object, Replace Relation, Swap Attribute;
# SugarCrepe++: the same and Avg
VALUES = {
    "VGPTScore Clip-FlanT5-xl": (77.14, 79.44, 80.33, 74.40, 82.43,
                                 60.41, 61.55, 65.31, 54.91, 71.02, 62.64),
    "VGPTScore Clip-FlanT5-xxl": (77.55, 80.33, 78.75, 77.03, 87.84,
                                  58.78, 57.23, 57.57, 54.27, 75.53, 60.67),
    "VGPTScore InstructBLIP": (76.73, 83.50, 87.11, 89.19, 86.49,
                               54.69, 51.78, 63.92, 53.13, 58.26, 56.36),
    "VGPTScore Llava-v1.5-7b": (76.33, 70.69, 71.31, 76.53, 84.98,
                                54.29, 48.60, 51.82, 52.06, 70.12, 55.38),
    "VGPTScore ShareGPT4v-7b": (79.59, 73.98, 74.39, 80.51, 88.89,
                                59.59, 51.40, 53.69, 56.97, 75.08, 59.35),
    "VGPTScore Blind Clip-FlanT5-xl": (63.67, 56.47, 47.94, 64.58, 65.62,
                                       47.76, 39.59, 31.54, 42.03, 51.95, 42.57),
    "VGPTScore Blind Clip-FlanT5-xxl": (61.63, 57.99, 48.24, 64.86, 66.82,
                                        42.04, 39.85, 30.08, 42.18, 50.90, 41.01),
    "VGPTScore Blind InstructBLIP": (60.82, 64.59, 59.56, 73.90, 73.27,
                                     43.67, 43.15, 39.95, 47.94, 52.55, 45.45),
    "VGPTScore Blind Llava-v1.5-7b": (57.14, 51.14, 42.13, 65.01, 65.92,
                                      42.04, 35.53, 28.45, 45.23, 52.70, 40.79),
    "VGPTScore Blind ShareGPT4v-7b": (56.73, 52.03, 44.19, 66.71, 68.17,
                                      40.82, 36.42, 30.99, 46.30, 54.20, 41.75),
    "VQAScore Clip-FlanT5-xl": (80.82, 89.85, 96.85, 83.29, 90.09,
                                72.24, 86.68, 95.34, 77.67, 85.74, 83.53),
    "VQAScore Clip-FlanT5-xxl": (83.27, 94.67, 97.64, 88.98, 94.74,
                                 74.69, 88.96, 95.94, 82.15, 88.29, 86.01),
    "VQAScore InstructBLIP": (78.37, 91.62, 96.73, 84.57, 84.68,
                              60.00, 83.38, 93.77, 76.32, 74.02, 77.50),
    "VQAScore Llava-v1.5-7b": (74.29, 87.56, 95.10, 80.58, 80.33,
                               57.14, 78.43, 91.53, 70.41, 68.17, 73.14),
    "VQAScore ShareGPT4v-7b": (80.82, 93.15, 97.88, 86.98, 89.64,
                               66.94, 83.25, 94.37, 75.11, 74.62, 78.86),
}  # fmt: skip

TABLE = PaperTable(
    name="scpp_table19",
    paper=PAPER,
    table="Table 19",
    description="generative VLMs: VGPTScore, VGPTScore Blind, VQAScore; ITT accuracy (%) per "
    "subset of SugarCrepe and SugarCrepe++",
    included="all 15 rows (3 methods x 5 models), each with a spec; SugarCrepe's Avg is not "
    "stored (the mean of 5 of its 7 subsets)",
    rows=ROWS,
    cells=cells(PUBLISHED_COLUMNS, VALUES),
)

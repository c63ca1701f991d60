"""Comparing runs: paired significance, cross-benchmark rankings, one results frame.

- `hits_by_item`: the per-item hits of one metric of a run (the building block of every
  analysis here and in `priors` / `qualitative`).
- `mcnemar`: the exact McNemar test (`lexsem.stats.mcnemar`, McNemar 1947) on the paired
  hits of two runs on the same items: b = items run A gets right and run B wrong, c = the
  reverse.
- `dtype_agreement`: for two runs of one model in two dtypes (fp32 and bf16), the items
  whose hit differs, per subset.
- `cross_benchmark`: SugarCrepe++ Table 6 / 15 — every model's accuracy and rank on two
  benchmarks (metrics), ↑/↓/= against a baseline model on each, and the Spearman / Kendall rank
  correlations of the two accuracies across models.
- `results_frame`: all the accuracies of several runs in one long pandas DataFrame.
- `main_metrics`, `plan_comparison`: which (benchmark, metric) pairs two runs can be compared on,
  and why the others cannot (`lexsem compare`).

Pure functions over `Run` objects; no plotting. See docs/analyses.md.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import stats

from lexsem.errors import LexsemError
from lexsem.results import samples
from lexsem.stats.bootstrap import MACRO, MICRO
from lexsem.stats.mcnemar import mcnemar_test
from lexsem.tasks.catalog import find_task

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from lexsem.results.run import Run

Key = tuple[str, str]  # (subset, item_id)

UP, DOWN, SAME = "↑", "↓", "="
_SHOW = 5  # item keys named in an error message


def require_pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas ships with the test/hf extras
        raise LexsemError("this analysis returns a pandas DataFrame: pip install pandas") from None
    return pd


def model_label(run: Run) -> str:
    """The name a run's model is shown under (its `record.model.name`)."""
    return run.record.model.name


def format_keys(keys: Iterable[Key], limit: int = _SHOW) -> str:
    """`swap_obj#3, swap_obj#7, ... (+12 more)` for error messages."""
    keys = sorted(keys)
    shown = ", ".join(f"{s}#{i}" for s, i in keys[:limit])
    return shown + (f", ... (+{len(keys) - limit} more)" if len(keys) > limit else "")


def _benchmark_rows(run: Run, benchmark: str) -> pa.Table:
    table = run.items
    if table.num_rows == 0 or "benchmark" not in table.column_names:
        raise LexsemError(f"run of {model_label(run)!r} has no per-item rows")
    rows = table.filter(pc.equal(table["benchmark"], benchmark))
    if rows.num_rows == 0:
        have = sorted(set(table["benchmark"].to_pylist()))
        raise LexsemError(
            f"run of {model_label(run)!r} has no items of benchmark {benchmark!r} "
            f"(it has: {', '.join(have)})"
        )
    return rows


def _main_metric(task: str) -> str | None:
    spec = find_task(task)
    return spec.metrics[0] if spec is not None else None


def resolve_metric(run: Run, benchmark: str, metric: str | None = None) -> str:
    """`metric` checked against the run; None picks the run's only main metric on `benchmark`
    (the first metric of its task: `tot`, `t2t`, `itt`, `i2t`, `acc`, ...; never `blind`)."""
    rows = _benchmark_rows(run, benchmark)
    pairs = sorted(set(zip(rows["task"].to_pylist(), rows["metric"].to_pylist(), strict=True)))
    metrics = sorted({m for _, m in pairs})
    if metric is not None:
        if metric not in metrics:
            raise LexsemError(
                f"run of {model_label(run)!r} has no metric {metric!r} on {benchmark!r} "
                f"(it has: {', '.join(metrics)})"
            )
        return metric
    main = sorted({m for t, m in pairs if t != "blind" and _main_metric(t) == m})
    if len(main) == 1:
        return main[0]
    raise LexsemError(
        f"run of {model_label(run)!r} on {benchmark!r}: "
        + (f"several main metrics ({', '.join(main)})" if main else "no model metric")
        + f"; pass metric= (available: {', '.join(metrics)})"
    )


@dataclass(frozen=True)
class ItemHits:
    """Per-item hits of one metric of one run on one benchmark (rows in the run's order)."""

    model: str
    benchmark: str
    metric: str
    subset: np.ndarray  # object (n,)
    item_id: np.ndarray  # object (n,)
    hit: np.ndarray  # bool (n,)
    tie: np.ndarray  # bool (n,)

    def __len__(self) -> int:
        return len(self.hit)

    def item_keys(self) -> list[Key]:
        return list(zip(self.subset.tolist(), self.item_id.tolist(), strict=True))

    def index(self) -> dict[Key, int]:
        return {k: i for i, k in enumerate(self.item_keys())}

    def take(self, keys: Sequence[Key], what: str = "items") -> ItemHits:
        """The rows of `keys`, in that order; refuses (naming them) keys the run lacks."""
        idx = self.index()
        missing = [k for k in keys if k not in idx]
        if missing:
            raise LexsemError(
                f"run of {self.model!r} does not cover {len(missing)} of the {len(keys)} {what} "
                f"on {self.benchmark}/{self.metric}: {format_keys(missing)}"
            )
        pos = np.fromiter((idx[k] for k in keys), np.int64, len(keys))
        return ItemHits(
            self.model,
            self.benchmark,
            self.metric,
            self.subset[pos],
            self.item_id[pos],
            self.hit[pos],
            self.tie[pos],
        )


def hits_by_item(
    run: Run, benchmark: str, metric: str | None = None, subset: str | None = None
) -> ItemHits:
    """The per-item hits of `metric` (default: the run's main metric) on `benchmark`, optionally
    one subset (`None`, `_micro` or `_macro`: all items)."""
    metric = resolve_metric(run, benchmark, metric)
    rows = _benchmark_rows(run, benchmark)
    rows = rows.filter(pc.equal(rows["metric"], metric))
    if subset not in (None, MICRO, MACRO):
        have = list(dict.fromkeys(rows["subset"].to_pylist()))
        rows = rows.filter(pc.equal(rows["subset"], subset))
        if rows.num_rows == 0:
            raise LexsemError(
                f"run of {model_label(run)!r} has no subset {subset!r} in {benchmark}/{metric} "
                f"(it has: {', '.join(have)})"
            )
    sub = np.asarray(rows["subset"].to_pylist(), dtype=object)
    ids = np.asarray([str(x) for x in rows["item_id"].to_pylist()], dtype=object)
    hit = np.asarray(rows["hit"].to_numpy(zero_copy_only=False), dtype=bool)
    tie = (
        np.asarray(rows["tie"].to_numpy(zero_copy_only=False), dtype=bool)
        if "tie" in rows.column_names
        else np.zeros(len(hit), dtype=bool)
    )
    out = ItemHits(model_label(run), benchmark, metric, sub, ids, hit, tie)
    if len(out.index()) != len(out):
        dup = [k for k, c in Counter(out.item_keys()).items() if c > 1]
        raise LexsemError(
            f"run of {out.model!r} lists items twice on {benchmark}/{metric}: {format_keys(dup)}"
        )
    return out


def check_same_items(a: ItemHits, b: ItemHits) -> None:
    """Refuse two hit sets over different items, naming what each lacks."""
    ka, kb = set(a.item_keys()), set(b.item_keys())
    if ka == kb:
        return
    parts = []
    if ka - kb:
        parts.append(f"{len(ka - kb)} items only in {a.model!r}: {format_keys(ka - kb)}")
    if kb - ka:
        parts.append(f"{len(kb - ka)} items only in {b.model!r}: {format_keys(kb - ka)}")
    raise LexsemError(
        f"the runs cover different items on {a.benchmark}/{a.metric}: " + "; ".join(parts)
    )


# -- McNemar ---------------------------------------------------------------------------------


def answers_a_sample(run: Run) -> bool:
    """Whether `run` answers a sample of the benchmark's items by design: a human study's run
    (`lexsem.results.samples`), paired with another run on the items it answered."""
    return samples.answers_a_sample(run.record)


def paired_keys(run_a: Run, run_b: Run, ha: ItemHits, hb: ItemHits) -> list[Key]:
    """The items two runs are paired on: the same items (`check_same_items`), or where one
    run answers a sample by design (`answers_a_sample`), the items of that sample, which the
    other run must cover (both samples: the items both answered)."""
    sample_a, sample_b = answers_a_sample(run_a), answers_a_sample(run_b)
    if not (sample_a or sample_b):
        check_same_items(ha, hb)
        return ha.item_keys()
    if sample_a and sample_b:
        theirs = set(hb.item_keys())
        keys = [k for k in ha.item_keys() if k in theirs]
        if not keys:
            raise LexsemError(
                f"the human runs {ha.model!r} and {hb.model!r} share no item on "
                f"{ha.benchmark}/{ha.metric}"
            )
        return keys
    return ha.item_keys() if sample_a else hb.item_keys()


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test of two runs on the same items (two-sided)."""

    benchmark: str
    metric: str
    subset: str  # a subset name or `_micro` (all items)
    model_a: str
    model_b: str
    n: int  # paired items
    b: int  # A right, B wrong
    c: int  # A wrong, B right
    statistic: float  # min(b, c)
    p_value: float  # two-sided exact binomial test on b of b + c, p = ½; 1.0 when b + c = 0
    accuracy_a: float  # percent, on the paired items
    accuracy_b: float
    hits_a: int  # items A gets right, of the n paired
    hits_b: int


def mcnemar(
    run_a: Run,
    run_b: Run,
    benchmark: str,
    metric: str | None = None,
    subset: str | None = None,
) -> McNemarResult:
    """Exact McNemar test on the paired per-item hits of `metric` (default: the main metric of
    run A) of two runs; `subset` restricts to one subset. Refuses runs over different items
    (a human study's run is paired on the items it answered: `paired_keys`), and runs that
    read different data of the benchmark (`lexsem.results.same_data`)."""
    from lexsem.results.same_data import data_conflict

    conflict = data_conflict(run_a.record, run_b.record, benchmark)
    if conflict is not None:
        raise LexsemError(f"the runs are not comparable: {conflict}")
    ha = hits_by_item(run_a, benchmark, metric, subset)
    hb = hits_by_item(run_b, benchmark, ha.metric, subset)
    keys = paired_keys(run_a, run_b, ha, hb)
    ha, hb = (
        ha.take(keys, "items the human study answered"),
        hb.take(keys, "items the human study answered"),
    )
    test = mcnemar_test(ha.hit, hb.hit)
    n = test.n
    return McNemarResult(
        benchmark=benchmark,
        metric=ha.metric,
        subset=subset if subset not in (None, MACRO) else MICRO,
        model_a=ha.model,
        model_b=hb.model,
        n=n,
        b=test.b,
        c=test.c,
        statistic=test.statistic,
        p_value=test.p_value,
        accuracy_a=100.0 * float(ha.hit.mean()) if n else float("nan"),
        accuracy_b=100.0 * float(hb.hit.mean()) if n else float("nan"),
        hits_a=int(ha.hit.sum()),
        hits_b=int(hb.hit.sum()),
    )


# -- one model in two dtypes ------------------------------------------------------------------


def same_model_other_dtype(run_a: Run, run_b: Run) -> bool:
    """Whether the two runs are of one model (the same fingerprint but for the dtype) run in
    two dtypes (e.g. fp32 and bf16)."""
    fa, fb = run_a.record.model.fingerprint, run_b.record.model.fingerprint
    if fa.get("dtype") == fb.get("dtype") or "dtype" not in fa or "dtype" not in fb:
        return False
    return {k: v for k, v in fa.items() if k != "dtype"} == {
        k: v for k, v in fb.items() if k != "dtype"
    }


@dataclass(frozen=True)
class DtypeAgreement:
    """Where one model run in two dtypes disagrees: per subset, the paired items and the items
    whose hit differs between the two runs."""

    benchmark: str
    metric: str
    dtype_a: str
    dtype_b: str
    items: dict[str, int]  # subset -> paired items
    differ: dict[str, int]  # subset -> items whose hit differs

    def line(self) -> str:
        """`swap_obj 3/245, ...; all 5/1000 items' hits differ between fp32 (A) and bf16 (B)`."""
        parts = [f"{s} {self.differ[s]}/{n}" for s, n in self.items.items()]
        total = sum(self.differ.values())
        return (
            f"{self.benchmark} {self.metric}: hits differ between {self.dtype_a} (A) and "
            f"{self.dtype_b} (B) on {total} of {sum(self.items.values())} items ("
            + ", ".join(parts)
            + ")"
        )


def dtype_agreement(
    run_a: Run, run_b: Run, benchmark: str, metric: str | None = None
) -> DtypeAgreement | None:
    """Per subset, the items whose hit differs between two runs of one model in two dtypes
    (`same_model_other_dtype`); None for runs of different models or of one dtype."""
    if not same_model_other_dtype(run_a, run_b):
        return None
    ha = hits_by_item(run_a, benchmark, metric)
    hb = hits_by_item(run_b, benchmark, ha.metric)
    check_same_items(ha, hb)
    hb = hb.take(ha.item_keys())
    items: dict[str, int] = {}
    differ: dict[str, int] = {}
    for sub, x, y in zip(ha.subset.tolist(), ha.hit.tolist(), hb.hit.tolist(), strict=True):
        items[sub] = items.get(sub, 0) + 1
        differ[sub] = differ.get(sub, 0) + int(x != y)
    return DtypeAgreement(
        benchmark,
        ha.metric,
        str(run_a.record.model.fingerprint["dtype"]),
        str(run_b.record.model.fingerprint["dtype"]),
        items,
        differ,
    )


# -- cross-benchmark ranks (SugarCrepe++ Table 6) -----------------------------------------------

MetricRef = tuple[str, str] | tuple[str, str, str | None]  # (benchmark, metric[, subset])


def _ref(ref: Sequence[Any]) -> tuple[str, str, str | None]:
    if len(ref) == 2:
        return str(ref[0]), str(ref[1]), None
    if len(ref) == 3:
        return str(ref[0]), str(ref[1]), None if ref[2] in (None, MICRO) else str(ref[2])
    raise LexsemError(f"expected (benchmark, metric[, subset]), got {ref!r}")


def _ref_name(ref: tuple[str, str, str | None]) -> str:
    bench, metric, subset = ref
    return f"{bench}/{subset or 'all'} {metric}"


def has_metric(run: Run, bench: str, metric: str) -> bool:
    t = run.items
    if t.num_rows == 0 or "benchmark" not in t.column_names:
        return False
    mask = pc.and_(pc.equal(t["benchmark"], bench), pc.equal(t["metric"], metric))
    return bool(pc.any(mask).as_py())


def metrics_of(run: Run, bench: str) -> list[str]:
    """Every metric `run` has per-item hits of on `bench` (sorted; none: [])."""
    t = run.items
    if t.num_rows == 0 or "benchmark" not in t.column_names:
        return []
    rows = t.filter(pc.equal(t["benchmark"], bench))
    return sorted(set(rows["metric"].to_pylist()))


def main_metrics(run: Run, benchmark: str) -> list[str]:
    """The main metric of each task the run has on `benchmark` (`tot`, `itt`, `acc`, ...;
    never `blind`), in the order of the run's tasks."""
    out = []
    for task in run.record.config.tasks:
        m = _main_metric(task) if task != "blind" else None
        if m is not None and m not in out and has_metric(run, benchmark, m):
            out.append(m)
    return out


@dataclass(frozen=True)
class ComparisonPlan:
    """What `lexsem compare A B` tests: (benchmark, metric) pairs, and why others are left out."""

    pairs: list[tuple[str, str]]
    skipped: list[str]  # one sentence per benchmark left out

    def why_empty(self) -> str:
        return "nothing to compare: " + "; ".join(self.skipped)


def _is_blind(run: Run) -> bool:
    return set(run.record.config.tasks) == {"blind"}


def _names(metrics: Sequence[str]) -> str:
    return ", ".join(metrics) or "none"


def plan_comparison(
    run_a: Run,
    run_b: Run,
    benchmarks: Sequence[str] | None = None,
    metric: str | None = None,
) -> ComparisonPlan:
    """The (benchmark, metric) pairs two runs can be compared on: `benchmarks` (default: the
    ones both runs hold) × `metric` (default: the main metrics both runs have there). A
    benchmark one run lacks, or that lacks the metric in either run, is skipped with a sentence
    saying so (what each run has instead), as is one the two runs read different data of
    (`lexsem.results.same_data`: a user file of the same name with other content, another
    version of a pinned file)."""
    from lexsem.results.same_data import data_conflict

    in_a = [b.name for b in run_a.record.benchmarks]
    in_b = {b.name for b in run_b.record.benchmarks}
    pairs: list[tuple[str, str]] = []
    skipped: list[str] = []
    if not benchmarks and not [b for b in in_a if b in in_b]:
        return ComparisonPlan([], ["the two runs share no benchmark"])
    for bench in benchmarks or [b for b in in_a if b in in_b]:
        missing = [x for x, have in (("A", bench in in_a), ("B", bench in in_b)) if not have]
        if missing:
            hint = _known(bench, [*in_a, *in_b]) if len(missing) == 2 else ""  # a misspelling
            skipped.append(f"{bench}: not in run {' nor '.join(missing)}{hint}")
            continue
        conflict = data_conflict(run_a.record, run_b.record, bench)
        if conflict is not None:
            skipped.append(f"{bench}: not comparable: {conflict}")
            continue
        if metric is not None:
            lack = [
                f"{x} has {_names(metrics_of(r, bench))}"
                for x, r in (("A", run_a), ("B", run_b))
                if not has_metric(r, bench, metric)
            ]
            if lack:
                skipped.append(f"{bench}: no metric {metric!r} ({'; '.join(lack)})")
            else:
                pairs.append((bench, metric))
            continue
        ma, mb = main_metrics(run_a, bench), main_metrics(run_b, bench)
        common = [m for m in ma if m in mb]
        if not common:
            has = [
                f"{x}: {_names(m)}" + (", a blind run: no model metric" if _is_blind(r) else "")
                for x, r, m in (("A", run_a, ma), ("B", run_b, mb))
            ]
            skipped.append(f"{bench}: no metric in common ({'; '.join(has)})")
        pairs += [(bench, m) for m in common]
    return ComparisonPlan(pairs, skipped)


def _known(bench: str, names: Sequence[str]) -> str:
    from lexsem.registry import did_you_mean

    return did_you_mean(bench, list(names))


def items_total(run: Run, benchmark: str, metric: str) -> int | None:
    """The items the benchmark's subsets hold in `run` for `metric` (scored or not), from its
    per-subset result rows; None when the run records no coverage (older runs)."""
    rows = [
        r
        for r in run.record.results
        if r.benchmark == benchmark and r.metric == metric and not r.subset.startswith("_")
    ]
    totals = [r.items_total for r in rows]
    return sum(totals) if rows and all(t is not None for t in totals) else None  # type: ignore[misc]


def model_labels(runs: Sequence[Run]) -> dict[str, str]:
    """fingerprint key -> display label: the model name, else spec, else name + key prefix."""
    keys = list(dict.fromkeys(r.record.model.fingerprint_key for r in runs))
    info = {r.record.model.fingerprint_key: r.record.model for r in runs}
    names = [info[k].name for k in keys]
    specs = [info[k].spec for k in keys]
    out = {}
    for k, name, spec in zip(keys, names, specs, strict=True):
        if names.count(name) == 1:
            out[k] = name
        elif specs.count(spec) == 1:
            out[k] = spec
        else:
            out[k] = f"{name} [{k[:8]}]"
    return out


@dataclass(frozen=True)
class CrossBenchmark:
    """Ranks of models on two benchmarks (SugarCrepe++ Table 6) and their rank correlations."""

    a: tuple[str, str, str | None]  # (benchmark, metric, subset or None = all items)
    b: tuple[str, str, str | None]
    baseline: str
    table: pd.DataFrame  # one row per model, see `cross_benchmark`
    spearman: float
    spearman_p: float
    kendall: float  # Kendall's tau-b
    kendall_p: float
    left_out: tuple[str, ...]  # models lacking one of the two metrics


def _arrow(x: float, ref: float) -> str:
    return UP if x > ref else DOWN if x < ref else SAME


def _correlation(fn: Any, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if len(x) < 2:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: NaN, not a warning
        res = fn(x, y)
    return float(res[0]), float(res[1])


def cross_benchmark(
    runs: Sequence[Run],
    metric_a: MetricRef,
    metric_b: MetricRef,
    baseline: str | None = None,
) -> CrossBenchmark:
    """Each model's accuracy and rank on A = (benchmark, metric, subset) and on B, with ↑/↓/=
    against the baseline model on each (SugarCrepe++ Table 6), and Spearman / Kendall tau-b
    correlations of the accuracies across models.

    A model is identified by its fingerprint; its A and B numbers may come from different runs
    (e.g. one run per benchmark). Accuracy = percent of hits over the items of `subset` (None:
    all items of the benchmark, the micro average), computed from the per-item rows. Ranks: 1 =
    best, equal accuracies share the best rank (`min`). `baseline` is a model label (default:
    the first model). Table columns: model, acc_a, acc_b, n_a, n_b, rank_a, rank_b,
    rank_change (rank_a − rank_b: > 0 = the model climbs on B), vs_baseline_a, vs_baseline_b
    (↑ / ↓ / = : accuracy above / below / equal to the baseline's — the same as ranking above /
    below it), flip (the arrows differ: the benchmarks disagree about the model vs the
    baseline). Models lacking A or B are left out and listed in `left_out`. Runs that read
    different data of A's or B's benchmark (`lexsem.results.same_data`) are a `LexsemError`.
    """
    ra, rb = _ref(metric_a), _ref(metric_b)
    if not runs:
        raise LexsemError("no runs given")
    from lexsem.results.same_data import comparable_groups

    parts, why = comparable_groups([r.record for r in runs], [ra[0], rb[0]])
    if len(parts) > 1:  # ranks of accuracies on unlike data would compare unlike things
        raise LexsemError(f"not ranked together: {why[0]}")
    labels = model_labels(runs)
    acc: dict[str, dict[str, tuple[float, int]]] = {k: {} for k in labels}
    for which, (bench, metric, subset) in (("a", ra), ("b", rb)):
        for run in runs:
            if not has_metric(run, bench, metric):
                continue
            key = run.record.model.fingerprint_key
            if which in acc[key]:
                raise LexsemError(
                    f"model {labels[key]!r} has {_ref_name((bench, metric, subset))} in two runs"
                )
            h = hits_by_item(run, bench, metric, subset)
            acc[key][which] = (100.0 * float(h.hit.mean()), len(h))
    kept = [k for k in labels if len(acc[k]) == 2]
    left_out = tuple(labels[k] for k in labels if len(acc[k]) < 2)
    if not kept:
        raise LexsemError(f"no model has both {_ref_name(ra)} and {_ref_name(rb)}")
    names = [labels[k] for k in kept]
    base = baseline if baseline is not None else names[0]
    if base not in names:
        raise LexsemError(
            f"baseline {base!r} is not among the models with both metrics ({', '.join(names)})"
        )
    a = np.array([acc[k]["a"][0] for k in kept])
    b = np.array([acc[k]["b"][0] for k in kept])
    rank_a = stats.rankdata(-a, method="min").astype(int)
    rank_b = stats.rankdata(-b, method="min").astype(int)
    i0 = names.index(base)
    pd = require_pandas()
    table = pd.DataFrame(
        {
            "model": names,
            "acc_a": a,
            "acc_b": b,
            "n_a": [acc[k]["a"][1] for k in kept],
            "n_b": [acc[k]["b"][1] for k in kept],
            "rank_a": rank_a,
            "rank_b": rank_b,
            "rank_change": rank_a - rank_b,
            "vs_baseline_a": ["" if i == i0 else _arrow(x, a[i0]) for i, x in enumerate(a)],
            "vs_baseline_b": ["" if i == i0 else _arrow(x, b[i0]) for i, x in enumerate(b)],
        }
    )
    table["flip"] = table["vs_baseline_a"] != table["vs_baseline_b"]
    rho, rho_p = _correlation(stats.spearmanr, a, b)
    tau, tau_p = _correlation(stats.kendalltau, a, b)
    return CrossBenchmark(ra, rb, base, table, rho, rho_p, tau, tau_p, left_out)


# -- one frame of all results ------------------------------------------------------------------

RESULT_COLUMNS = (
    "model",
    "spec",
    "run_id",
    "benchmark",
    "task",
    "metric",
    "subset",
    "accuracy",
    "ci_low",
    "ci_high",
    "n",
    "hits",
    "ties",
)


def results_frame(runs: Sequence[Run] | Run) -> pd.DataFrame:
    """Every accuracy of every run (from the run records), one row per model × benchmark ×
    task × metric × subset (subset: a name, `_micro`, `_macro` or a group like `_swap`), with
    columns `RESULT_COLUMNS`. Pivot it for a paper table, e.g.
    `df.pivot_table(index="model", columns=["benchmark", "subset"], values="accuracy")`."""
    pd = require_pandas()
    if not isinstance(runs, Sequence):
        runs = [runs]
    rows = [
        {
            "model": run.record.model.name,
            "spec": run.record.model.spec,
            "run_id": run.record.run_id,
            "benchmark": r.benchmark,
            "task": r.task,
            "metric": r.metric,
            "subset": r.subset,
            "accuracy": r.accuracy,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "n": r.n,
            "hits": r.hits,
            "ties": r.ties,
        }
        for run in runs
        for r in run.record.results
    ]
    df = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for col in ("accuracy", "ci_low", "ci_high"):
        df[col] = df[col].astype("float64")
    return df

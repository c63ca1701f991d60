"""Qualitative cases (SugarCrepe++ App. H): items where most models pass the image-text task
(ITT) but fail the text-only task (TOT), and the other three combinations.

For each model (runs are grouped by model fingerprint, so a model's ITT and TOT may come from
two runs or from one run holding both tasks) and each item, the model falls in one of four
cases: pass A & fail B, pass B & fail A, pass both, fail both (A, B = two metrics of the same
benchmark, by default A = `itt`, B = `tot`). An item's `case` is the case holding a share
≥ `threshold` of the models (default 0.5: "most") and strictly more models than any other case;
else `mixed`. The table has the item's captions (from the benchmark files), the share of models
passing each metric and the share in each case. Pure function; returns a pandas DataFrame.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lexsem.analysis.run_comparison import (
    ItemHits,
    Key,
    format_keys,
    has_metric,
    hits_by_item,
    model_labels,
    require_pandas,
)
from lexsem.errors import LexsemError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from lexsem.results.run import Run

MIXED = "mixed"  # no case holds `threshold` of the models, or two cases tie
UNKNOWN = "unknown"  # no model has both metrics on the item


def case_names(metric_a: str = "itt", metric_b: str = "tot") -> tuple[str, str, str, str]:
    """The four case labels, e.g. `pass_itt_fail_tot`, `pass_tot_fail_itt`, `pass_both`,
    `fail_both` (App. H.2, H.3, —, H.1)."""
    return (
        f"pass_{metric_a}_fail_{metric_b}",
        f"pass_{metric_b}_fail_{metric_a}",
        "pass_both",
        "fail_both",
    )


def item_captions(item: Any) -> dict[str, Any]:
    """The item's captions by field: p1, p2, n (triplets), pos, neg (pairs), caption0, caption1
    (BiVLC, Winoground), or `captions`: the list of several captions."""
    if hasattr(item, "p1"):
        return {"p1": item.p1, "p2": item.p2, "n": item.n}
    if hasattr(item, "pos"):
        return {"pos": item.pos, "neg": item.neg}
    if hasattr(item, "caption0"):
        return {"caption0": item.caption0, "caption1": item.caption1}
    return {"captions": list(item.texts())}


def qualitative_cases(
    runs: Sequence[Run],
    benchmark: str,
    *,
    metric_a: str = "itt",
    metric_b: str = "tot",
    threshold: float = 0.5,
    case: str | None = None,
    captions: bool = True,
    data_dir: str | Path | None = None,
    items: Sequence[Any] | None = None,
    allow_partial: bool = False,
) -> pd.DataFrame:
    """One row per item of `benchmark` (or only the items whose `case` is `case`): subset,
    item_id, the captions (triplet: p1, p2, n; pair: pos, neg; quad: caption0, caption1; multi:
    captions — read with `lexsem.benchmarks.load.load_benchmark(benchmark, data_dir=data_dir)`; skip
    with `captions=False`, or pass the benchmark's `items` already loaded), `n_models_{a}`,
    `frac_pass_{a}`, `n_models_{b}`, `frac_pass_{b}`,
    `n_models_both`, `frac_<case>` for the four `case_names(a, b)` and `case`.

    Every model that has `metric_a` or `metric_b` on the benchmark counts for that metric; the
    cases count the models that have both. All (model, metric) hit sets must cover the same
    items (a mismatch is refused, naming the items) unless `allow_partial`, where each item
    counts the models that have it. `df.attrs["models"]` lists the models."""
    names = _check_args(metric_a, metric_b, threshold, case, runs)
    labels = model_labels(runs)
    per_model = _hits_per_model(runs, benchmark, metric_a, metric_b, labels)
    order = _item_order(per_model, benchmark, labels, allow_partial)
    a, b = (_hit_matrix(per_model, order, m) for m in (metric_a, metric_b))
    both = ~np.isnan(a) & ~np.isnan(b)
    n_a, n_b, n_both = (~np.isnan(a)).sum(1), (~np.isnan(b)).sum(1), both.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac_a = np.nansum(a, 1) / n_a
        frac_b = np.nansum(b, 1) / n_b
    fracs, cases = _cases(a, b, both, n_both, names, threshold)

    pd = require_pandas()
    data: dict[str, Any] = {
        "subset": [k[0] for k in order],
        "item_id": [k[1] for k in order],
    }
    if captions:
        data |= _caption_columns(benchmark, order, items, data_dir)
    data |= {
        f"n_models_{metric_a}": n_a,
        f"frac_pass_{metric_a}": frac_a,
        f"n_models_{metric_b}": n_b,
        f"frac_pass_{metric_b}": frac_b,
        "n_models_both": n_both,
        **{f"frac_{name}": fracs[:, j] for j, name in enumerate(names)},
        "case": cases.tolist(),
    }
    df = pd.DataFrame(data)
    df.attrs["models"] = [labels[k] for k in per_model]
    df.attrs["threshold"] = threshold
    if case is not None:
        df = df[df["case"] == case].reset_index(drop=True)  # keeps attrs
    return df


def _check_args(
    metric_a: str, metric_b: str, threshold: float, case: str | None, runs: Sequence[Run]
) -> tuple[str, ...]:
    """The four case names of (metric_a, metric_b), once the arguments are checked."""
    if metric_a == metric_b:
        raise LexsemError("metric_a and metric_b must differ")
    if not 0.0 < threshold <= 1.0:
        raise LexsemError(f"threshold must be in (0, 1], got {threshold}")
    names = case_names(metric_a, metric_b)
    if case is not None and case not in (*names, MIXED, UNKNOWN):
        raise LexsemError(f"unknown case {case!r}; one of {', '.join((*names, MIXED, UNKNOWN))}")
    if not runs:
        raise LexsemError("no runs given")
    return tuple(names)


def _hits_per_model(
    runs: Sequence[Run], benchmark: str, metric_a: str, metric_b: str, labels: dict[str, str]
) -> dict[str, dict[str, ItemHits]]:
    """fingerprint key -> metric -> the model's hits (some models have one metric only)."""
    per_model: dict[str, dict[str, ItemHits]] = {}
    for run in runs:
        key = run.record.model.fingerprint_key
        for metric in (metric_a, metric_b):
            if not has_metric(run, benchmark, metric):
                continue
            if metric in per_model.get(key, {}):
                raise LexsemError(f"model {labels[key]!r} has {benchmark}/{metric} in two runs")
            per_model.setdefault(key, {})[metric] = hits_by_item(run, benchmark, metric)
    if not per_model:
        raise LexsemError(f"no run has {metric_a!r} or {metric_b!r} on {benchmark!r}")
    if not any(len(m) == 2 for m in per_model.values()):
        raise LexsemError(
            f"no model has both {metric_a!r} and {metric_b!r} on {benchmark!r} (the cases need "
            "both for the same model; group a model's runs by giving them all)"
        )
    return per_model


def _item_order(
    per_model: dict[str, dict[str, ItemHits]],
    benchmark: str,
    labels: dict[str, str],
    allow_partial: bool,
) -> list[Key]:
    """Every item of any hit set, first-seen order; unless `allow_partial`, every hit set must
    cover them all."""
    order: list[Key] = list(
        dict.fromkeys(k for m in per_model.values() for h in m.values() for k in h.item_keys())
    )
    if not allow_partial:
        seen = set(order)
        for key, m in per_model.items():
            for metric, h in m.items():
                missing = seen - set(h.item_keys())
                if missing:
                    raise LexsemError(
                        f"{labels[key]!r} {benchmark}/{metric} lacks {len(missing)} items the "
                        f"other runs have: {format_keys(missing)} (allow_partial=True to count "
                        "per item)"
                    )
    return order


def _hit_matrix(
    per_model: dict[str, dict[str, ItemHits]], order: list[Key], metric: str
) -> np.ndarray:
    """(items, models): 1 hit, 0 miss, NaN absent."""
    pos = {k: i for i, k in enumerate(order)}
    cols = []
    for m in per_model.values():
        col = np.full(len(order), np.nan)
        if metric in m:
            h = m[metric]
            idx = np.fromiter((pos[k] for k in h.item_keys()), np.int64, len(h))
            col[idx] = h.hit.astype(np.float64)
        cols.append(col)
    return np.column_stack(cols)


def _cases(
    a: np.ndarray, b: np.ndarray, both: np.ndarray, n_both: np.ndarray,
    names: Sequence[str], threshold: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(share of the models with both metrics in each case, the item's case)."""
    pa, pb = a == 1, b == 1
    counts = np.stack(
        [
            (both & pa & ~pb).sum(1),
            (both & ~pa & pb).sum(1),
            (both & pa & pb).sum(1),
            (both & ~pa & ~pb).sum(1),
        ],
        axis=1,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        fracs = counts / n_both[:, None]
    best = counts.argmax(1)
    top = counts.max(1)
    unique = (counts == top[:, None]).sum(1) == 1
    cases = np.where(
        n_both == 0,
        UNKNOWN,
        np.where(unique & (fracs.max(1) >= threshold - 1e-12), np.asarray(names)[best], MIXED),
    )
    return fracs, cases


def _caption_columns(
    benchmark: str, order: list[Key], items: Sequence[Any] | None, data_dir: Any
) -> dict[str, list[Any]]:
    """The captions of each item, by column (read from the benchmark's files if not given)."""
    if items is None:
        from lexsem.benchmarks.load import load_benchmark

        items = load_benchmark(benchmark, data_dir=data_dir).items
    loaded = {(it.subset, str(it.id)): it for it in items}
    absent = [k for k in order if k not in loaded]
    if absent:
        raise LexsemError(
            f"{len(absent)} items of the runs are not in the {benchmark!r} files: "
            f"{format_keys(absent)}"
        )
    caps = [item_captions(loaded[k]) for k in order]
    return {col: [c[col] for c in caps] for col in (caps[0] if caps else ())}

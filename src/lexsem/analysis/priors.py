"""Linguistic priors: how much of a benchmark a blind text scorer solves, and how a model does on
the items it cannot solve ("The Role of Linguistic Priors in Measuring Compositional
Generalization of Vision-Language Models", Wu et al. 2023, §4-5; SugarCrepe++ App. I).

PP below is that paper's "perplexity" (§4.1, Eq. 1): the mean negative log-likelihood per token
(nats), not exponentiated — what the `lm:` backend computes. The prior map's axes say so
(`axis_label`): "mean token NLL".

Input: *blind runs* — `lexsem.evaluate(text_scorer, ...)`, task and metric `blind`, per-item
columns `v_p1, v_p2, v_n` (triplets), `v_pos, v_neg` (pairs) or `v_c0..` (multi-caption, the
true caption first), each the per-text score ORIENTED so that higher = more plausible (a
perplexity scorer's v = −PP) — and *model runs* (any run with per-item hits).

- `blind_scores`: the per-item v of one blind run, or AVG_LM of several (mean of v per text over
  runs; refuses runs that point different ways, see `scorer_lower_is_better`).
- `hard_items`: items the blind predictor gets wrong (strict ties: a tie is a miss).
- `hard_test_accuracy`, `linguistic_gap`: a model's accuracy on those items; overall − hard.
- `prior_map`: the paper's Fig. 1 (§5.1), the model's accuracy over a 10 × 10 grid of
  (true-caption score, false-caption score); `axis_label` says what its axes hold.
- `score_gaps`: ½(V(P1)+V(P2)) − V(N) / V(C+) − V(C−) per item (SugarCrepe++ Fig. 11).

Pure functions; arrays and small dataclasses out; no plotting. See docs/analyses.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lexsem.analysis.run_comparison import Key, format_keys, hits_by_item, model_label
from lexsem.errors import LexsemError
from lexsem.stats.bootstrap import MACRO, MICRO, Accuracy, summarize
from lexsem.stats.ties import Hits, check_policy
from lexsem.tasks.blind import V_CAPTIONS, V_N, V_NEG, V_P1, V_P2, V_POS, blind_task

if TYPE_CHECKING:  # pragma: no cover
    from lexsem.results.run import Run

BLIND = "blind"
TRIPLET, PAIR, MULTI = "triplet", "pair", "multi"

# what the axes of a prior map hold
RAW_LOWER = "raw, lower is better"  # the scorer's own value, e.g. perplexity (PP)
RAW_HIGHER = "raw, higher is better"  # e.g. Vera plausibility, CoLA P(acceptable)
ORIENTED = "oriented, higher is better"  # v as stored in blind runs (−PP for perplexity)

# blind-scorer backends (lexsem.models.backends.lm, vera, cola): which way their raw scores point
_LOWER_IS_BETTER = {"lm": True, "vera": False, "cola": False}


# -- orientation ----------------------------------------------------------------------------------


def _fingerprint_orientation(fp: Any) -> bool | None:
    if not isinstance(fp, dict):
        return None
    if isinstance(fp.get("lower_is_better"), bool):
        return fp["lower_is_better"]
    backend = fp.get("backend")
    if backend in _LOWER_IS_BETTER:
        return _LOWER_IS_BETTER[backend]
    if backend == "avg":
        members = {_fingerprint_orientation(m) for m in fp.get("members", ())}
        return members.pop() if len(members) == 1 else None
    return None


def scorer_lower_is_better(run: Run) -> bool | None:
    """Which way the blind run's RAW scorer points: True for perplexity-style (lower = more
    plausible: `lm:`, AVG of `lm:`), False for plausibility / grammar (`vera:`, `cola:`), from
    the run's model fingerprint (`lower_is_better` key, else backend) or spec prefix; None when
    it cannot be told (a custom scorer that records neither)."""
    model = run.record.model
    found = _fingerprint_orientation(model.fingerprint)
    if found is None:
        prefix = model.spec.partition(":")[0].strip().lower() if ":" in model.spec else ""
        found = _LOWER_IS_BETTER.get(prefix)
    return found


def _direction(lower: bool | None) -> str:
    return {True: "lower is better", False: "higher is better", None: "unknown"}[lower]


def _orientation(runs: Sequence[Run], lower_is_better: bool | Sequence[bool] | None) -> bool | None:
    detected = [scorer_lower_is_better(r) for r in runs]
    if lower_is_better is None:
        final: list[bool | None] = detected
    else:
        given = (
            [bool(lower_is_better)] * len(runs)
            if isinstance(lower_is_better, bool)
            else [bool(x) for x in lower_is_better]
        )
        if len(given) != len(runs):
            raise LexsemError(f"lower_is_better: {len(given)} values for {len(runs)} blind runs")
        for run, d, g in zip(runs, detected, given, strict=True):
            if d is not None and d != g:
                raise LexsemError(
                    f"blind run {model_label(run)!r} is {_direction(d)}, but "
                    f"lower_is_better={g} was given for it"
                )
        final = list(given)
    if len({f for f in final if f is not None}) > 1:
        listing = ", ".join(
            f"{model_label(r)!r} ({_direction(f)})" for r, f in zip(runs, final, strict=True)
        )
        raise LexsemError(
            "cannot average blind runs whose scores point different ways (a perplexity and a "
            f"plausibility score do not average): {listing}"
        )
    if len(runs) > 1 and None in final:
        unknown = [model_label(r) for r, f in zip(runs, final, strict=True) if f is None]
        raise LexsemError(
            f"cannot tell which way the scores of blind run(s) {', '.join(map(repr, unknown))} "
            "point, so they cannot be checked before averaging: pass lower_is_better=True "
            "(perplexity-style) or False"
        )
    return final[0]


# -- blind scores ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlindScores:
    """Per-item blind scores of one benchmark: one run's, or AVG_LM of several runs."""

    benchmark: str
    kind: str  # "triplet" | "pair" | "multi"
    columns: tuple[str, ...]  # v_p1, v_p2, v_n | v_pos, v_neg | v_c0.. (true caption first)
    subset: np.ndarray  # object (n,)
    item_id: np.ndarray  # object (n,)
    values: np.ndarray  # float64 (n, k): ORIENTED (higher = more plausible), mean over runs
    lower_is_better: bool | None  # the raw scorer's direction (None: unknown)
    scorers: tuple[str, ...]  # model names of the blind runs averaged
    dropped: tuple[Key, ...] = ()  # items some run skipped (non-finite score): left out

    def __len__(self) -> int:
        return len(self.item_id)

    def item_keys(self) -> list[Key]:
        return list(zip(self.subset.tolist(), self.item_id.tolist(), strict=True))

    def raw(self) -> np.ndarray:
        """The scores in the scorer's own scale (PP for a perplexity scorer: −values)."""
        return -self.values if self.lower_is_better else self.values

    def hits(self, tie_policy: str = "strict") -> Hits:
        """The blind decision: triplet — N strictly worst; pair — C+ strictly better than C−;
        multi — the true caption strictly best (a tie is a miss under `strict`)."""
        task = blind_task(self.kind, len(self.columns))  # the rule the blind runs are scored by
        values = {c: self.values[:, j] for j, c in enumerate(self.columns)}
        return task.compute(values, check_policy(tie_policy))[BLIND]

    def true_false(self, scale: str = "raw") -> tuple[np.ndarray, np.ndarray]:
        """(true-caption score, false-caption score) per item, in the `raw` scale (PP for a
        perplexity scorer; the oriented value when the direction is unknown) or `oriented`.
        Triplet: true = mean of P1 and P2, false = N. Pair: C+, C−. Multi: the true caption
        and the most plausible false caption (the one the blind decision is up against)."""
        if scale not in ("raw", "oriented"):
            raise ValueError(f"scale must be 'raw' or 'oriented', got {scale!r}")
        v = self.values
        if self.kind == TRIPLET:
            t, f = (v[:, 0] + v[:, 1]) / 2.0, v[:, 2]
        elif self.kind == PAIR:
            t, f = v[:, 0], v[:, 1]
        else:
            t, f = v[:, 0], v[:, 1:].max(axis=1)
        if scale == "raw" and self.lower_is_better:
            return -t, -f
        return t, f


def _as_runs(blind: Run | Sequence[Run]) -> list[Run]:
    runs = [blind] if hasattr(blind, "record") else list(blind)  # type: ignore[arg-type]
    if not runs:
        raise LexsemError("no blind run given")
    return runs


def _skipped(run: Run, benchmark: str) -> set[Key]:
    out: set[Key] = set()
    for info in run.record.benchmarks:
        if info.name == benchmark:
            out |= {(s, str(i)) for s, ids in info.skipped.items() for i in ids}
    return out


def _one_blind(run: Run, benchmark: str, subsets: Sequence[str] | None):
    t = run.items
    if t.num_rows == 0 or "benchmark" not in t.column_names:
        raise LexsemError(f"run of {model_label(run)!r} has no per-item rows")
    rows = t.filter(pc.equal(t["benchmark"], benchmark))
    if rows.num_rows == 0:
        raise LexsemError(f"blind run {model_label(run)!r} has no items of {benchmark!r}")
    rows = rows.filter(pc.equal(rows["metric"], BLIND))
    if rows.num_rows == 0:
        raise LexsemError(
            f"run of {model_label(run)!r} is not a blind run on {benchmark!r} (no metric "
            f"{BLIND!r}; evaluate a text scorer to get one)"
        )
    if subsets is not None:
        have = set(rows["subset"].to_pylist())
        absent = [s for s in subsets if s not in have]
        if absent:
            raise LexsemError(
                f"blind run {model_label(run)!r} has no subset {', '.join(absent)} of "
                f"{benchmark!r} (it has: {', '.join(sorted(have))})"
            )
        rows = rows.filter(pc.is_in(rows["subset"], value_set=pa.array(list(subsets))))
    present = [c for c in rows.column_names if c.startswith("v_") and rows[c].null_count == 0]
    if {V_P1, V_P2, V_N} <= set(present):
        kind, cols = TRIPLET, (V_P1, V_P2, V_N)
    elif {V_POS, V_NEG} <= set(present):
        kind, cols = PAIR, (V_POS, V_NEG)
    else:
        cols = tuple(c for c in V_CAPTIONS if c in present)
        if len(cols) < 2 or cols != V_CAPTIONS[: len(cols)]:
            raise LexsemError(
                f"blind run {model_label(run)!r} on {benchmark!r}: no complete blind score "
                f"columns (expected v_p1/v_p2/v_n, v_pos/v_neg or v_c0..; found {present})"
            )
        kind = MULTI
    keys = list(
        zip(
            rows["subset"].to_pylist(),
            [str(x) for x in rows["item_id"].to_pylist()],
            strict=True,
        )
    )
    values = np.column_stack(
        [np.asarray(rows[c].to_numpy(zero_copy_only=False), dtype=np.float64) for c in cols]
    )
    if len(set(keys)) != len(keys):
        raise LexsemError(f"blind run {model_label(run)!r} lists items of {benchmark!r} twice")
    return kind, cols, keys, values


def blind_scores(
    blind: Run | Sequence[Run],
    benchmark: str,
    *,
    lower_is_better: bool | Sequence[bool] | None = None,
    subsets: Sequence[str] | None = None,
) -> BlindScores:
    """The per-item blind scores of `benchmark` from one blind run, or AVG_LM over several:
    the mean over runs of each text's oriented score v (for perplexity runs: −mean PP, exactly
    the paper's AVG_LM, §4.1). Runs must point the same way: their direction is read from the run
    (`scorer_lower_is_better`) or given by `lower_is_better` (one bool, or one per run); a
    mixture, or an unknown direction with several runs, is refused. Runs must cover the same
    items; an item one run skipped (recorded in its run: non-finite score, e.g. a one-token
    text under an LM) is left out of the average (listed in `dropped`), any other difference is
    refused. `subsets` restricts to those subsets."""
    runs = _as_runs(blind)
    lower = _orientation(runs, lower_is_better)
    parts = [_one_blind(r, benchmark, subsets) for r in runs]
    kinds = {(k, c) for k, c, _, _ in parts}
    if len(kinds) > 1:
        raise LexsemError(f"the blind runs score different item kinds on {benchmark!r}: {kinds}")
    kind, cols, keys0, _ = parts[0]
    sets = [set(k) for _, _, k, _ in parts]
    union = set().union(*sets)
    dropped: set[Key] = set()
    for run, s in zip(runs, sets, strict=True):
        missing = union - s
        unexplained = missing - _skipped(run, benchmark)
        if unexplained:
            raise LexsemError(
                f"the blind runs cover different items of {benchmark!r}: "
                f"{model_label(run)!r} lacks {len(unexplained)}: {format_keys(unexplained)}"
            )
        dropped |= missing
    order = [k for k in keys0 if k not in dropped]  # every other key is in every run
    total = np.zeros((len(order), len(cols)))
    for _, _, ks, vals in parts:
        pos = {k: i for i, k in enumerate(ks)}
        total += vals[np.fromiter((pos[k] for k in order), np.int64, len(order))]
    mean = total / len(parts)
    return BlindScores(
        benchmark=benchmark,
        kind=kind,
        columns=cols,
        subset=np.asarray([k[0] for k in order], dtype=object),
        item_id=np.asarray([k[1] for k in order], dtype=object),
        values=mean,
        lower_is_better=lower,
        scorers=tuple(model_label(r) for r in runs),
        dropped=tuple(sorted(dropped)),
    )


# -- hard items -----------------------------------------------------------------------------------


class HardItems(frozenset):
    """A frozenset of (subset, item_id): the items the blind predictor gets wrong. Carries the
    benchmark, every item the predictor judged (`universe`) and the scorers averaged."""

    benchmark: str
    universe: frozenset[Key]
    scorers: tuple[str, ...]

    def __new__(
        cls,
        keys: Iterable[Key],
        *,
        benchmark: str,
        universe: Iterable[Key],
        scorers: tuple[str, ...] = (),
    ) -> HardItems:
        obj = super().__new__(cls, keys)
        obj.benchmark = benchmark
        obj.universe = frozenset(universe)
        obj.scorers = scorers
        if not obj <= obj.universe:
            raise ValueError("hard items must be part of the universe")
        return obj

    @property
    def blind_accuracy(self) -> float:
        """Accuracy (%) of the blind predictor on its universe."""
        n = len(self.universe)
        return 100.0 * (n - len(self)) / n if n else float("nan")


def _scores_of(
    blind: Run | Sequence[Run] | BlindScores,
    benchmark: str,
    lower_is_better: bool | Sequence[bool] | None,
    subsets: Sequence[str] | None,
) -> BlindScores:
    """`blind_scores` of the runs, or the `BlindScores` given (computed once, used by several
    analyses); those must be of `benchmark` and cannot be re-oriented or re-subsetted."""
    if not isinstance(blind, BlindScores):
        return blind_scores(blind, benchmark, lower_is_better=lower_is_better, subsets=subsets)
    if blind.benchmark != benchmark:
        raise LexsemError(f"blind scores of {blind.benchmark!r} given for {benchmark!r}")
    if lower_is_better is not None or subsets is not None:
        raise LexsemError("lower_is_better / subsets apply to blind runs, not to BlindScores")
    return blind


def hard_items(
    blind: Run | Sequence[Run] | BlindScores,
    benchmark: str,
    *,
    lower_is_better: bool | Sequence[bool] | None = None,
    subsets: Sequence[str] | None = None,
    tie_policy: str = "strict",
) -> HardItems:
    """The items the blind predictor (one blind run, or AVG_LM over several — see
    `blind_scores`) gets WRONG, as a set of (subset, item_id). The decision is re-made from the
    (averaged) oriented scores: triplet — N strictly the worst of the three; pair — C+
    strictly better than C−; multi — the true caption strictly best. Under the default strict
    policy a tie is a miss, so a tied item is hard."""
    bs = _scores_of(blind, benchmark, lower_is_better, subsets)
    h = bs.hits(tie_policy)
    keys = bs.item_keys()
    return HardItems(
        (k for k, hit in zip(keys, h.hits.tolist(), strict=True) if not hit),
        benchmark=benchmark,
        universe=keys,
        scorers=bs.scorers,
    )


def _bench(hard: Any, benchmark: str | None) -> str:
    known = getattr(hard, "benchmark", None)
    if benchmark is None:
        if known is None:
            raise LexsemError("benchmark= is needed (the hard set does not say which)")
        return known
    if known is not None and known != benchmark:
        raise LexsemError(f"the hard items are of {known!r}, not {benchmark!r}")
    return benchmark


# -- hard test accuracy and linguistic gap ---------------------------------------------------------


@dataclass(frozen=True)
class HardTestAccuracy:
    """A model's accuracy on the hard items: overall (all hard items) and per subset."""

    model: str
    benchmark: str
    metric: str
    accuracy: float  # percent, over all hard items
    n: int  # hard items
    hits: int
    ties: int
    ci_low: float | None  # percent; None without bootstrap
    ci_high: float | None
    by_subset: dict[str, Accuracy] = field(default_factory=dict)  # + _micro/_macro if > 1 subset


def _grouped(subset: np.ndarray, order: Iterable[str]) -> dict[str, np.ndarray]:
    return {s: np.flatnonzero(subset == s) for s in order}


def _order(subsets: np.ndarray) -> list[str]:
    return list(dict.fromkeys(subsets.tolist()))


def hard_test_accuracy(
    model_run: Run,
    hard: set[Key] | frozenset[Key],
    benchmark: str | None = None,
    metric: str | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> HardTestAccuracy:
    """Accuracy (%) of `metric` (default: the run's main metric) of `model_run` on the hard
    items, with percentile-bootstrap CIs (`metrics.accuracy.summarize`: items resampled within
    subsets), per subset and overall. Refuses (naming them) hard items the run lacks. A subset
    with no hard item gets n = 0 and NaN."""
    bench = _bench(hard, benchmark)
    h = hits_by_item(model_run, bench, metric)
    have = set(h.item_keys())
    missing = set(hard) - have
    if missing:
        raise LexsemError(
            f"run of {h.model!r} does not cover {len(missing)} of the {len(hard)} hard items of "
            f"{bench}/{h.metric}: {format_keys(missing)}"
        )
    sub = h.take([k for k in h.item_keys() if k in hard])
    groups = _grouped(sub.subset, _order(sub.subset))
    by = {s: Hits(sub.hit[i], sub.tie[i]) for s, i in groups.items()}
    accs = {a.subset: a for a in summarize(by, n_boot=n_boot, seed=seed, confidence=confidence)}
    universe = getattr(hard, "universe", None)
    all_subsets = _order(h.subset)
    if universe is not None:
        in_universe = {s for s, _ in universe}
        all_subsets = [s for s in all_subsets if s in in_universe]
    for s in all_subsets:
        if s not in accs:
            accs[s] = Accuracy(s, 0, 0, 0, float("nan"), None, None)
    n = len(sub)
    if n == 0:
        overall = Accuracy(MICRO, 0, 0, 0, float("nan"), None, None)
    elif len(by) == 1:
        overall = next(iter(accs[s] for s in by))
    else:
        overall = accs[MICRO]
    lo, hi = overall.ci_low, overall.ci_high
    if lo is None and n_boot > 0 and n >= 2:  # a subset with a single hard item: pool them
        (pooled,) = summarize(
            {MICRO: Hits(sub.hit, sub.tie)}, n_boot=n_boot, seed=seed + 1000, confidence=confidence
        )
        lo, hi = pooled.ci_low, pooled.ci_high
    ordered = {s: accs[s] for s in [*all_subsets, MICRO, MACRO] if s in accs}
    return HardTestAccuracy(
        model=h.model,
        benchmark=bench,
        metric=h.metric,
        accuracy=overall.accuracy,
        n=n,
        hits=overall.hits,
        ties=overall.ties,
        ci_low=lo,
        ci_high=hi,
        by_subset=ordered,
    )


@dataclass(frozen=True)
class GapRow:
    subset: str  # a subset name or `_micro` (all items)
    n: int  # items the overall accuracy is over
    n_hard: int
    accuracy: float  # percent, over the n items
    hard_accuracy: float  # percent, over the n_hard items (NaN when none)
    gap: float  # accuracy − hard_accuracy, percentage points
    ci_low: float | None  # bootstrap CI of the gap
    ci_high: float | None


@dataclass(frozen=True)
class LinguisticGap:
    """Overall accuracy − hard-test accuracy (The Role of Linguistic Priors, §5.2, Table 3 and
    App. A), per subset and overall."""

    model: str
    benchmark: str
    metric: str
    rows: tuple[GapRow, ...]  # the subsets, then `_micro`
    hard: HardTestAccuracy

    @property
    def overall(self) -> GapRow:
        return self.rows[-1]

    @property
    def by_subset(self) -> dict[str, GapRow]:
        return {r.subset: r for r in self.rows}


_CHUNK = 4_000_000  # resampled indices per bootstrap chunk


def _gap_ci(
    strata: Sequence[tuple[np.ndarray, np.ndarray]], n_boot: int, seed: int, confidence: float
) -> tuple[float | None, float | None]:
    """Percentile bootstrap of mean(hit) − mean(hit | hard), items resampled within strata;
    replicates that draw no hard item are dropped (None when over half are)."""
    n_total = sum(len(h) for h, _ in strata)
    if n_boot <= 0 or n_total < 2 or not any(k.any() for _, k in strata):
        return None, None
    rng = np.random.default_rng(seed)
    hits_all = np.zeros(n_boot)
    hits_hard = np.zeros(n_boot)
    n_hard = np.zeros(n_boot)
    for hit, hard in strata:
        n = len(hit)
        hh = (hit & hard).astype(np.float64)
        step = max(1, _CHUNK // max(n, 1))
        for start in range(0, n_boot, step):
            stop = min(n_boot, start + step)
            idx = rng.integers(0, n, size=(stop - start, n))
            hits_all[start:stop] += hit[idx].sum(axis=1)
            hits_hard[start:stop] += hh[idx].sum(axis=1)
            n_hard[start:stop] += hard[idx].sum(axis=1)
    ok = n_hard > 0
    if ok.sum() < max(2, n_boot // 2):
        return None, None
    gap = hits_all[ok] / n_total - hits_hard[ok] / n_hard[ok]
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(gap, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return float(lo) * 100.0, float(hi) * 100.0


def linguistic_gap(
    model_run: Run,
    hard: set[Key] | frozenset[Key],
    benchmark: str | None = None,
    metric: str | None = None,
    *,
    universe: Iterable[Key] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> LinguisticGap:
    """Linguistic gap = overall accuracy − hard-test accuracy (percentage points), per subset
    and overall (`_micro`). "Overall" is over `universe`: by default every item the blind
    predictor judged (`hard.universe` of `hard_items`), else all the run's items. CI: percentile
    bootstrap of the difference, items resampled within subsets (hard and easy items together,
    so the overlap of the two accuracies is respected). Refuses a run that lacks items of the
    universe (naming them)."""
    bench = _bench(hard, benchmark)
    h = hits_by_item(model_run, bench, metric)
    if universe is None:
        universe = getattr(hard, "universe", None)
    keys = h.item_keys() if universe is None else None
    if universe is not None:
        uni = set(universe)
        if not set(hard) <= uni:
            raise LexsemError("the hard items are not all part of the universe")
        missing = uni - set(h.item_keys())
        if missing:
            raise LexsemError(
                f"run of {h.model!r} does not cover {len(missing)} of the {len(uni)} items of "
                f"{bench}/{h.metric} the blind predictor judged: {format_keys(missing)}"
            )
        keys = [k for k in h.item_keys() if k in uni]
    assert keys is not None
    sub = h.take(keys)
    hard_test = hard_test_accuracy(
        model_run, hard, bench, h.metric, n_boot=n_boot, seed=seed, confidence=confidence
    )
    is_hard = np.fromiter((k in hard for k in sub.item_keys()), bool, len(sub))
    rows = []
    strata = []
    for i, (s, idx) in enumerate(_grouped(sub.subset, _order(sub.subset)).items()):
        hit, hk = sub.hit[idx], is_hard[idx]
        strata.append((hit, hk))
        rows.append(_gap_row(s, [(hit, hk)], n_boot, seed + i, confidence))
    rows.append(_gap_row(MICRO, strata, n_boot, seed + 1000, confidence))
    return LinguisticGap(h.model, bench, h.metric, tuple(rows), hard_test)


def _gap_row(
    name: str, strata: list[tuple[np.ndarray, np.ndarray]], n_boot: int, seed: int, conf: float
) -> GapRow:
    hit = np.concatenate([h for h, _ in strata])
    hk = np.concatenate([k for _, k in strata])
    n, n_hard = len(hit), int(hk.sum())
    acc = 100.0 * float(hit.mean()) if n else float("nan")
    hard_acc = 100.0 * float(hit[hk].mean()) if n_hard else float("nan")
    lo, hi = _gap_ci(strata, n_boot, seed, conf)
    return GapRow(name, n, n_hard, acc, hard_acc, acc - hard_acc, lo, hi)


# -- prior map (The Role of Linguistic Priors, §5.1, Fig. 1) --------------------------------------


@dataclass(frozen=True)
class PriorMap:
    """A model's accuracy over a bins × bins grid of (true-caption, false-caption) blind score.

    Index [i, j]: i = bin of the TRUE-caption score (x axis of the paper's Fig. 1), j = bin of the
    FALSE-caption score (y axis); bins ascend with the score. For perplexity (scale "raw" of a
    lower-is-better scorer) small i and large j are the items easiest for the language model
    (the top-left of Fig. 1 when j is drawn upwards).
    """

    model: str
    benchmark: str
    metric: str
    scorers: tuple[str, ...]
    scale: str  # RAW_LOWER (e.g. perplexity) | RAW_HIGHER (e.g. Vera) | ORIENTED
    true_edges: np.ndarray  # (bins + 1,) equal-width bin edges of the true-caption score
    false_edges: np.ndarray  # (bins + 1,)
    counts: np.ndarray  # int (bins, bins): items per block
    hits: np.ndarray  # int (bins, bins): model hits per block
    accuracy: np.ndarray  # float (bins, bins): percent; NaN where counts < min_items
    min_items: int
    n_items: int
    true_score: np.ndarray  # (n,) per item, the x value
    false_score: np.ndarray  # (n,) per item, the y value


def _bin_index(x: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.histogram_bin_edges(x, bins=bins)  # equal widths over [min, max]
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)
    return edges, idx


def prior_map(
    blind: Run | Sequence[Run] | BlindScores,
    model_run: Run,
    benchmark: str,
    metric: str | None = None,
    *,
    bins: int = 10,
    min_items: int = 10,
    scale: str = "raw",
    lower_is_better: bool | Sequence[bool] | None = None,
    subsets: Sequence[str] | None = None,
) -> PriorMap:
    """The paper's Fig. 1 (§5.1): split the range [min, max] of the true-caption score and of the
    false-caption score (each axis its own range) into `bins` equal-width bins — bins² blocks —
    and give the model's accuracy (%) in each block holding ≥ `min_items` items (NaN otherwise),
    with the counts. Scores come from `blind_scores` (one run or AVG_LM); which score is "true"
    and "false": see `BlindScores.true_false` (triplet: mean of P1, P2 vs N). `scale="raw"`
    puts the scorer's own value on the axes — the UN-oriented PP for a perplexity scorer, as in
    the paper (for a scorer of unknown direction, the oriented value); `"oriented"` puts v.
    Bins are half-open [a, b) except the last, which holds the maximum. Refuses a model run
    that lacks items the blind runs scored."""
    if bins < 1 or min_items < 1:
        raise ValueError("bins and min_items must be positive")
    bs = _scores_of(blind, benchmark, lower_is_better, subsets)
    h = hits_by_item(model_run, benchmark, metric).take(bs.item_keys(), "blind-scored items")
    t, f = bs.true_false(scale)
    t_edges, ti = _bin_index(t, bins)
    f_edges, fi = _bin_index(f, bins)
    counts = np.zeros((bins, bins), dtype=np.int64)
    hits = np.zeros((bins, bins), dtype=np.int64)
    np.add.at(counts, (ti, fi), 1)
    np.add.at(hits, (ti, fi), h.hit.astype(np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(counts >= min_items, 100.0 * hits / counts, np.nan)
    if scale == "oriented" or bs.lower_is_better is None:
        name = ORIENTED
    else:
        name = RAW_LOWER if bs.lower_is_better else RAW_HIGHER
    return PriorMap(
        model=h.model,
        benchmark=benchmark,
        metric=h.metric,
        scorers=bs.scorers,
        scale=name,
        true_edges=t_edges,
        false_edges=f_edges,
        counts=counts,
        hits=hits,
        accuracy=acc,
        min_items=min_items,
        n_items=len(bs),
        true_score=t,
        false_score=f,
    )


# what the raw scores of each blind-scorer backend are, lower (True) or higher (False) is better
_RAW_NAMES = {
    "lm": "mean token NLL in nats",
    "vera": "Vera plausibility",
    "cola": "CoLA P(acceptable)",
}


def axis_label(pm: PriorMap, blind: Sequence[Run]) -> str:
    """What the axes of prior map `pm` show, in words, e.g. `mean token NLL in nats (lower = more
    plausible)` for `lm:` runs — the paper's "perplexity" (§4.1, Eq. 1) is that mean NLL, never
    exponentiated — averaged over the LMs when there are several (AVG_LM)."""
    backends = {r.record.model.fingerprint.get("backend") for r in blind}
    if pm.scale == ORIENTED:
        return "oriented blind score (higher = more plausible)"
    name = _RAW_NAMES.get(next(iter(backends))) if len(backends) == 1 else None
    name = name or "blind score"
    if len(blind) > 1:
        name += f", averaged over {len(blind)} scorers"
    way = "lower" if pm.scale == RAW_LOWER else "higher"
    return f"{name} ({way} = more plausible)"


# -- score gaps (SugarCrepe++ App. I) -------------------------------------------------------------


@dataclass(frozen=True)
class GapSummary:
    n: int
    mean: float
    median: float
    std: float
    frac_positive: float  # share of items with gap > 0 (the positive(s) more plausible)
    frac_zero: float
    frac_negative: float


def _summary(g: np.ndarray) -> GapSummary:
    n = len(g)
    if n == 0:
        nan = float("nan")
        return GapSummary(0, nan, nan, nan, nan, nan, nan)
    return GapSummary(
        n,
        float(np.mean(g)),
        float(np.median(g)),
        float(np.std(g)),
        float(np.mean(g > 0)),
        float(np.mean(g == 0)),
        float(np.mean(g < 0)),
    )


@dataclass(frozen=True)
class ScoreGaps:
    """Per-item plausibility/grammar score gap of a blind scorer (positive − negative)."""

    benchmark: str
    scorers: tuple[str, ...]
    kind: str
    subset: np.ndarray  # object (n,)
    item_id: np.ndarray  # object (n,)
    gap: np.ndarray  # float64 (n,), oriented: > 0 = the positive side is more plausible
    summary: GapSummary  # over all items
    by_subset: dict[str, GapSummary]


def score_gaps(
    blind: Run | Sequence[Run] | BlindScores,
    benchmark: str,
    *,
    lower_is_better: bool | Sequence[bool] | None = None,
    subsets: Sequence[str] | None = None,
) -> ScoreGaps:
    """SugarCrepe++ App. I / Fig. 11: per item, on the ORIENTED scores v (higher = more
    plausible), gap = ½(V(P1)+V(P2)) − V(N) for triplets, V(C+) − V(C−) for pairs, V(true) −
    mean V(false captions) for multi-caption items; with mean, median, std and the share of
    gaps > 0 / = 0 / < 0, overall and per subset. A benchmark that blind plausibility or grammar
    cannot solve centres the gap on 0. One blind run, or AVG over several (`blind_scores`)."""
    bs = _scores_of(blind, benchmark, lower_is_better, subsets)
    v = bs.values
    if bs.kind == TRIPLET:
        gap = 0.5 * (v[:, 0] + v[:, 1]) - v[:, 2]
    elif bs.kind == PAIR:
        gap = v[:, 0] - v[:, 1]
    else:
        gap = v[:, 0] - v[:, 1:].mean(axis=1)
    by = {s: _summary(gap[i]) for s, i in _grouped(bs.subset, _order(bs.subset)).items()}
    return ScoreGaps(
        benchmark=benchmark,
        scorers=bs.scorers,
        kind=bs.kind,
        subset=bs.subset,
        item_id=bs.item_id,
        gap=gap,
        summary=_summary(gap),
        by_subset=by,
    )

"""The analysis sections of the HTML report: linguistic priors, lexical / syntactic similarity,
comparisons between runs and qualitative cases, built from any set of runs.

`analysis_sections(runs, options)` sorts the runs into *blind runs* (text scorers: task `blind`)
and *model runs* (everything else) and returns one `Section` per analysis that the runs allow:

- Linguistic priors ("The Role of Linguistic Priors in Measuring Compositional Generalization of
  Vision-Language Models" §4-5; SugarCrepe++ App. I) — needs ≥ 1 blind run: blind accuracy per
  scorer (and AVG of all blind scorers), hard-test accuracy and linguistic gap of every model
  run on the hard items of the averaged blind predictor, the 10 × 10 prior map per model, and
  the score-gap histograms.
- Lexical and syntactic similarity (SugarCrepe++ App. D, VISLA App. C.1) — per triplet / pair
  benchmark of the runs, read from the benchmark files: normalised Levenshtein similarity,
  token Jaccard, edit-distance histograms; with a constituency parser also the tree-kernel
  similarity and SLS.
- Comparing runs — exact McNemar tests between every two models on each benchmark's main
  metric, and the cross-benchmark ranking (SugarCrepe++ Table 6) with rank scatter plots.
- Qualitative cases (SugarCrepe++ App. H) — where models pass ITT but fail TOT (and the
  other cases), with the captions.

An analysis that the runs do not allow (no blind run, a single model, data files not at hand)
is left out, with a line saying why in the section's text. `build_report` gives the whole page.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.analysis import priors, qualitative, similarity
from lexsem.analysis import run_comparison as compare
from lexsem.benchmarks.items import PairItem, TripletItem
from lexsem.errors import LexsemError
from lexsem.report.generative import generative_sections
from lexsem.report.html import Section, render_html, runs_metadata, runs_overview_sections
from lexsem.report.labels import run_labels
from lexsem.report.same_items import same_items_tables
from lexsem.report.tables import Table, label
from lexsem.results.run import Run

BLIND = priors.BLIND
PRIORS = "The Role of Linguistic Priors"  # the paper's short title, after its first full mention
_NLL = (
    " The paper calls this mean negative log-likelihood per token its perplexity (§4.1, Eq. 1);"
    " it is not exponentiated."
)
# (metric a, metric b) pairs for the qualitative cases, in order of preference
_CASE_PAIRS = (("itt", "tot"), ("i2t", "t2t"), ("p1n", "p2n"))


@dataclass(frozen=True)
class ReportOptions:
    """What the analyses read and how they compute (defaults: the papers')."""

    # benchmark files, read offline (else the folders the runs recorded, else the cache)
    data_dir: str | Path | None = None
    cache_dir: str | Path | None = None
    baseline: str | None = None  # model label for ↑/↓ (default: the first model)
    parser: str | None = None  # constituency parser for syntactic similarity / SLS
    n_boot: int = 1000
    seed: int = 0
    prior_bins: int = 10
    prior_min_items: int = 10
    qualitative_rows: int = 8  # example items shown per case
    max_prior_maps: int = 8  # prior-map figures per benchmark (one per model)
    # a running `lexsem explore` (http://HOST:PORT): the qualitative cases link to its slices
    explore_url: str | None = None


Names = dict[str, str]  # run id -> the run's label in the report (`lexsem.report.labels`)


def _labels(runs: Sequence[Run]) -> Names:
    return run_labels([r.record for r in runs])


def is_blind(run: Run) -> bool:
    """A run of a blind text scorer (its only task is `blind`)."""
    return bool(run.record.config.tasks) and set(run.record.config.tasks) == {BLIND}


def split_runs(runs: Sequence[Run]) -> tuple[list[Run], list[Run]]:
    """(model runs, blind runs)."""
    return [r for r in runs if not is_blind(r)], [r for r in runs if is_blind(r)]


def _benchmarks(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(b.name for r in runs for b in r.record.benchmarks))


def main_metrics(run: Run, benchmark: str) -> list[str]:
    """The main metric of each task the run has on `benchmark` (`tot`, `itt`, `acc`, ...)."""
    return compare.main_metrics(run, benchmark)


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.{digits}f}"


def _ci(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f" [{lo:.1f}, {hi:.1f}]"


def _plots() -> Any:
    try:
        from lexsem.report import plots
    except ImportError:  # matplotlib missing: tables only
        return None
    return plots


# -- linguistic priors ----------------------------------------------------------------------------


def _blind_accuracy_table(
    blind: Sequence[Run], bench: str, avg: priors.BlindScores | None, names: Names
) -> Table:
    t = Table(
        f"{bench}: blind text scorers (the caption judged alone, no image)",
        ["scorer", "direction", "subset", "items", "accuracy (%)", "ties"],
    )
    for run in blind:
        lower = priors.scorer_lower_is_better(run)
        direction = {True: "lower is better", False: "higher is better"}.get(lower, "unknown")  # type: ignore[arg-type]
        for r in run.record.results:
            if r.benchmark == bench and r.metric == BLIND:
                t.rows.append(
                    [names[run.record.run_id], direction, label(r.subset), str(r.n),
                     _fmt(r.accuracy) + _ci(r.ci_low, r.ci_high), str(r.ties)]
                )  # fmt: skip
    if avg is not None and len(avg.scorers) > 1:
        h = avg.hits()
        acc = 100.0 * float(np.mean(h.hits)) if len(avg) else float("nan")
        t.rows.append(
            [f"AVG ({_scorers(blind, names)})", "mean of oriented scores", "micro",
             str(len(avg)), _fmt(acc), str(int(np.sum(h.ties)))]
        )  # fmt: skip
    t.notes.append(
        "A triplet is solved when N gets the worst score of the three (chance 33.3%), a pair "
        "when C+ beats C− (chance 50%); a tie is a miss."
    )
    return t


def _scorers(blind: Sequence[Run], names: Names) -> str:
    return ", ".join(names[r.record.run_id] for r in blind)


def _priors_for(
    bench: str, blind: Sequence[Run], models: Sequence[Run], opt: ReportOptions, names: Names
) -> Section:
    plots = _plots()
    sec = Section(bench)
    notes: list[str] = []
    try:
        avg = priors.blind_scores(list(blind), bench)
    except LexsemError as exc:
        avg = None
        notes.append(f"- The blind runs cannot be averaged: {exc}")
    sec.tables.append(_blind_accuracy_table(blind, bench, avg, names))
    if avg is None:
        sec.text = "\n".join(notes)
        return sec
    hard = priors.hard_items(avg, bench)
    scorers = _scorers(blind, names)
    gap_table = Table(
        f"{bench}: hard-test accuracy and linguistic gap (hard items: the {len(hard)} of "
        f"{len(avg)} items the blind predictor [{scorers}] gets wrong)",
        ["model", "metric", "accuracy (%)", "hard-test accuracy (%)", "linguistic gap (pp)",
         "hard items"],
    )  # fmt: skip
    maps: list[tuple[str, Run, str]] = []
    for run in models:
        for metric in main_metrics(run, bench):
            try:
                gap = priors.linguistic_gap(
                    run, hard, bench, metric, n_boot=opt.n_boot, seed=opt.seed
                )
            except LexsemError as exc:
                notes.append(f"- {names[run.record.run_id]} / {label(metric)}: {exc}")
                continue
            row, ht = gap.overall, gap.hard
            gap_table.rows.append(
                [names[run.record.run_id], label(metric), _fmt(row.accuracy),
                 _fmt(ht.accuracy) + _ci(ht.ci_low, ht.ci_high),
                 _fmt(row.gap) + _ci(row.ci_low, row.ci_high), str(row.n_hard)]
            )  # fmt: skip
            maps.append((names[run.record.run_id], run, metric))
    gap_table.notes.append(
        f"Linguistic gap = accuracy on all items − accuracy on the hard items ({PRIORS}, §5.2); "
        "brackets: bootstrap confidence intervals."
    )
    if gap_table.rows:
        sec.tables.append(gap_table)
    else:
        notes.append("- No model run covers these items: no hard-test accuracy.")
    if plots is not None:
        _prior_maps(sec, notes, plots, avg, bench, maps, blind, scorers, opt)
        _score_gap_figure(sec, notes, plots, bench, blind, names)
    sec.text = "\n".join(notes)
    return sec


def _prior_maps(
    sec: Section, notes: list[str], plots: Any, avg: Any, bench: str,
    maps: list[tuple[str, Run, str]], blind: Sequence[Run], scorers: str, opt: ReportOptions,
) -> None:  # fmt: skip
    """One prior-map figure per (model, metric), up to `opt.max_prior_maps`."""
    for name, run, metric in maps[: opt.max_prior_maps]:
        try:
            pm = priors.prior_map(
                avg, run, bench, metric,
                bins=opt.prior_bins, min_items=opt.prior_min_items,
            )  # fmt: skip
        except LexsemError as exc:
            notes.append(f"- prior map of {name}: {exc}")
            continue
        axis = priors.axis_label(pm, blind)
        png = plots.heatmap(
            pm.accuracy.T,
            pm.true_edges,
            pm.false_edges,
            counts=pm.counts.T,
            title=f"{name} — {bench} {label(metric)}: prior map",
            xlabel=f"true-caption {axis}",
            ylabel=f"false-caption {axis}",
            grey=f"fewer than {opt.prior_min_items} items",
        )
        sec.figures.append(
            (
                f"Prior map ({PRIORS}, §5.1, Fig. 1): accuracy (%) of {name} "
                f"({label(metric)}) per block of true- and false-caption {axis} under "
                f"[{scorers}], {opt.prior_bins} equal-width bins per axis; blocks with fewer "
                f"than {opt.prior_min_items} items are grey." + (_NLL if "NLL" in axis else ""),
                png,
            )
        )
    if len(maps) > opt.max_prior_maps:
        notes.append(f"- Prior maps shown for the first {opt.max_prior_maps} model metrics.")


def _score_gap_figure(
    sec: Section, notes: list[str], plots: Any, bench: str, blind: Sequence[Run], names: Names
) -> None:
    """The histogram of each blind scorer's per-item score gap."""
    series = {}
    for run in blind:
        try:
            series[names[run.record.run_id]] = priors.score_gaps(run, bench).gap
        except LexsemError as exc:
            notes.append(f"- score gap of {names[run.record.run_id]}: {exc}")
    if series:
        png = plots.histograms(
            series,
            f"{bench}: blind score gap (positive − negative)",
            "score gap (oriented: > 0 = positive more plausible)",
        )
        sec.figures.append(
            (
                "Score gap per item (SugarCrepe++ App. I): ½(V(P1)+V(P2)) − V(N) for "
                "triplets, V(C+) − V(C−) for pairs, on each scorer's oriented score "
                "(an LM's mean token NLL negated). A benchmark free of language bias centres "
                "it on 0.",
                png,
            )
        )


def priors_section(
    blind: Sequence[Run], models: Sequence[Run], opt: ReportOptions, names: Names | None = None
) -> Section:
    names = names or _labels([*blind, *models])
    sec = Section("Linguistic priors")
    if not blind:
        sec.text = (
            "No blind run given. Add one or more runs of a text scorer (e.g. "
            "lexsem eval -m lm:gpt2 -b ...) to see blind accuracy, hard-test accuracy, the "
            "linguistic gap, prior maps and score gaps."
        )
        return sec
    sec.text = (
        "How much of each benchmark a text-only (blind) scorer solves, and how each model does "
        "on the items that scorer gets wrong (The Role of Linguistic Priors in Measuring "
        "Compositional Generalization of Vision-Language Models, §5.2: hard-test accuracy and "
        "linguistic gap; §5.1: prior map). With several blind runs the predictor is their "
        "average (AVG_LM, §4.1)."
    )
    benches = [b for b in _benchmarks(blind) if all(b in _benchmarks([r]) for r in blind)]
    for bench in benches:
        with_bench = [r for r in models if bench in _benchmarks([r])]
        sec.subsections.append(_priors_for(bench, blind, with_bench, opt, names))
    return sec


# -- similarity ----------------------------------------------------------------------------------


class _Items:
    """Each benchmark's items, read from its files at most once per report (similarity and the
    qualitative captions both need them); a failure is kept and raised again.

    A report never touches the network: the files are looked for offline, in `opt.data_dir`,
    else in the data folder the runs recorded (`config.evaluation.data_dir`), and in the
    download cache (`opt.cache_dir`, else the runs' own). Only the subsets the runs scored are
    read."""

    def __init__(self, opt: ReportOptions, runs: Sequence[Run] = ()) -> None:
        self.opt = opt
        self._got: dict[str, list[Any] | LexsemError] = {}
        self._subsets: dict[str, list[str]] = {}
        self._dirs: dict[str, tuple[Any, Any]] = {}
        for r in runs:
            ev = r.record.config.evaluation or {}
            for b in r.record.benchmarks:
                subs = self._subsets.setdefault(b.name, [])
                subs += [s for s in b.subsets if s not in subs]
                where = (_path(ev.get("data_dir")), _path(ev.get("cache_dir")))
                old = self._dirs.get(b.name, (None, None))
                self._dirs[b.name] = (old[0] or where[0], old[1] or where[1])

    def __call__(self, bench: str) -> list[Any]:
        if bench not in self._got:
            from lexsem.benchmarks.load import load_benchmark

            data_dir, cache_dir = self._dirs.get(bench, (None, None))
            subsets = self._subsets.get(bench)
            try:
                loaded = load_benchmark(
                    f"{bench}/{','.join(subsets)}" if subsets else bench,
                    data_dir=self.opt.data_dir or data_dir,
                    cache_root=self.opt.cache_dir or cache_dir,
                    offline=True,
                )
                self._got[bench] = list(loaded.items)
            except LexsemError as exc:
                self._got[bench] = exc
        got = self._got[bench]
        if isinstance(got, LexsemError):
            raise got
        return got


def _path(value: Any) -> Path | None:
    """A folder recorded in run.json (home paths are written `~/...`)."""
    return Path(value).expanduser() if isinstance(value, str) and value else None


def _similarity_for(bench: str, items: list[Any], opt: ReportOptions) -> Section | None:
    if not items or not (
        all(isinstance(i, TripletItem) for i in items)
        or all(isinstance(i, PairItem) for i in items)
    ):
        return None
    plots = _plots()
    sec = Section(bench)
    lex = similarity.pairwise_lexical(items)
    jac = similarity.pairwise_lexical(items, measure="jaccard")
    dist = similarity.pairwise_lexical(items, measure="distance")
    t = Table(
        f"{bench}: lexical similarity per caption pair ({len(items)} items)",
        ["pair", "measure", "mean", "q1", "median", "q3"],
    )
    measures = [("lexical (1 − NLD)", lex), ("token Jaccard", jac), ("edit distance", dist)]
    for name, scores in measures:
        for pair, d in similarity.describe(scores).items():
            if d.get("n", 0) == 0:
                continue
            digits = 1 if name == "edit distance" else 3
            t.rows.append(
                [pair, name, *(_fmt(d[k], digits) for k in ("mean", "q1", "median", "q3"))]
            )
    t.notes.append(
        "Lexical similarity: 1 − GLD / max(|X|, |Y|) over characters, the form that reproduces "
        "SugarCrepe++ Table 9 (docs/similarity.md); edit distance: characters."
    )
    sec.tables.append(t)
    notes = []
    syn = None
    if opt.parser:
        from lexsem.analysis.parsers import CachingParser, get_parser

        try:
            parser = CachingParser(get_parser(opt.parser), True)
            syn = similarity.pairwise_syntactic(items, parser)
        except LexsemError as exc:
            notes.append(f"- Syntactic similarity left out: {exc}")
    else:
        notes.append(
            "- Syntactic similarity and SLS need a constituency parser: --parser stanza (or "
            "benepar / corenlp)."
        )
    if syn is not None:
        sls = {k: np.asarray(similarity.sls(lex[k], syn[k])) for k in lex}
        st = Table(
            f"{bench}: syntactic similarity (tree kernel) and SLS",
            ["pair", "measure", "mean", "q1", "median", "q3"],
        )
        for name, scores in (("syntactic", syn), ("SLS", sls)):
            for pair, d in similarity.describe(scores).items():
                st.rows.append(
                    [pair, name, *(_fmt(d[k], 3) for k in ("mean", "q1", "median", "q3"))]
                )
        sec.tables.append(st)
    if plots is not None:
        sec.figures.append(
            (
                "Lexical similarity of each caption pair (SugarCrepe++ Fig. 6 layout): boxes "
                "give quartiles, whiskers 1.5 IQR, the diamond the mean.",
                plots.box_plots(lex, f"{bench}: lexical similarity", "1 − NLD (characters)"),
            )
        )
        sec.figures.append(
            (
                "Character edit distance of each caption pair (VISLA Fig. 8).",
                plots.histograms(dist, f"{bench}: edit distance", "characters", vline=None),
            )
        )
        if syn is not None:
            sec.figures.append(
                (
                    "SLS = lexical × syntactic similarity per caption pair (SugarCrepe++ Fig. 6).",
                    plots.box_plots(sls, f"{bench}: SLS", "SLS"),
                )
            )
    sec.text = "\n".join(notes)
    return sec


def similarity_section(
    runs: Sequence[Run], opt: ReportOptions, items_of: _Items | None = None
) -> Section:
    sec = Section(
        "Lexical and syntactic similarity",
        "How different the captions of each item are in form (SugarCrepe++ App. D, VISLA "
        "App. C.1): a benchmark whose negatives are lexically closer to the positive than the "
        "paraphrase is tests meaning, not words.",
    )
    items_of = items_of or _Items(opt, runs)
    notes = []
    for bench in _benchmarks(runs):
        try:
            items = items_of(bench)
        except LexsemError as exc:
            notes.append(
                f"- {bench}: benchmark files not at hand ({exc}); give their folder with "
                "lexsem report --data-dir DIR"
            )
            continue
        sub = _similarity_for(bench, items, opt)
        if sub is None:
            notes.append(f"- {bench}: not triplets or pairs; no caption-pair similarity.")
        else:
            sec.subsections.append(sub)
    if notes:
        sec.text += "\n\n" + "\n".join(notes)
    return sec


# -- comparing runs ------------------------------------------------------------------------------


def _models_by_metric(models: Sequence[Run]) -> dict[tuple[str, str], list[Run]]:
    out: dict[tuple[str, str], list[Run]] = {}
    for run in models:
        for bench in _benchmarks([run]):
            for m in main_metrics(run, bench):
                out.setdefault((bench, m), []).append(run)
    return out


def _cross_labels(
    models: Sequence[Run], refs: Sequence[tuple[str, str]], names: Names
) -> dict[str, str]:
    """The cross-benchmark table's model labels (one per model fingerprint, which may pool two
    runs) -> the report's labels: the label of the model's runs, or with several runs the
    model's name and their run ids."""
    by_key = compare.model_labels(models)
    runs: dict[str, list[Run]] = {}
    for run in models:
        if any(compare.has_metric(run, b, m) for b, m in refs):
            runs.setdefault(run.record.model.fingerprint_key, []).append(run)
    out = {}
    for key, group in runs.items():
        shown = list(dict.fromkeys(names[r.record.run_id] for r in group))
        if len(shown) == 1:
            out[by_key[key]] = shown[0]
        else:
            ids = ", ".join(r.record.run_id[:8] for r in group)
            out[by_key[key]] = f"{group[0].record.model.name} ({ids})"
    return out


def comparison_section(
    models: Sequence[Run], opt: ReportOptions, names: Names | None = None
) -> Section:
    names = names or _labels(models)
    plots = _plots()
    sec = Section("Comparing runs")
    sec.tables += same_items_tables(models, names)  # a human study's run: its items only
    by = _models_by_metric(models)
    mc = Table(
        "Exact McNemar tests on the paired per-item hits",
        ["benchmark", "metric", "model A", "model B", "items", "acc A (%)", "acc B (%)",
         "A only", "B only", "p"],
    )  # fmt: skip
    notes = []
    for (bench, metric), runs in by.items():
        for a, b in itertools.combinations(runs, 2):
            try:
                r = compare.mcnemar(a, b, bench, metric)
            except LexsemError as exc:
                notes.append(
                    f"- McNemar {names[a.record.run_id]} vs {names[b.record.run_id]}: {exc}"
                )
                continue
            mc.rows.append(
                [bench, label(metric), names[a.record.run_id], names[b.record.run_id], str(r.n),
                 _fmt(r.accuracy_a), _fmt(r.accuracy_b), str(r.b), str(r.c), f"{r.p_value:.3g}"]
            )  # fmt: skip
    mc.notes.append(
        "A only / B only: items one model gets right and the other wrong; p: two-sided exact "
        "binomial test of A only vs B only (exact McNemar test, McNemar 1947)."
    )
    if mc.rows:
        sec.tables.append(mc)
    refs = [k for k, v in by.items() if len(v) >= 2]
    for ra, rb in itertools.combinations(refs, 2):
        try:
            cb = compare.cross_benchmark(models, ra, rb, baseline=opt.baseline)
        except LexsemError as exc:
            notes.append(f"- {ra[0]} {label(ra[1])} vs {rb[0]} {label(rb[1])}: {exc}")
            continue
        if len(cb.table) < 2:
            continue
        shown = _cross_labels(models, (ra, rb), names)
        cb.table["model"] = [shown.get(m, m) for m in cb.table["model"]]
        name_a, name_b = f"{ra[0]} {label(ra[1])}", f"{rb[0]} {label(rb[1])}"
        base = shown.get(cb.baseline, cb.baseline)
        t = Table(
            f"Cross-benchmark: {name_a} vs {name_b} (baseline: {base})",
            ["model", f"{name_a} (%)", "rank", "vs baseline", f"{name_b} (%)", "rank",
             "vs baseline"],
        )  # fmt: skip
        for row in cb.table.itertuples(index=False):
            t.rows.append(
                [row.model, _fmt(row.acc_a), str(row.rank_a), row.vs_baseline_a,
                 _fmt(row.acc_b), str(row.rank_b), row.vs_baseline_b]
            )  # fmt: skip
        t.notes.append(
            f"Spearman ρ = {_fmt(cb.spearman, 3)} (p = {_fmt(cb.spearman_p, 3)}), Kendall τ-b = "
            f"{_fmt(cb.kendall, 3)} (p = {_fmt(cb.kendall_p, 3)}); ↑/↓: above/below the "
            "baseline model (SugarCrepe++ Table 6)."
        )
        sec.tables.append(t)
        if plots is not None and len(cb.table) >= 2:
            png = plots.rank_scatter(
                cb.table["acc_a"].tolist(),
                cb.table["acc_b"].tolist(),
                cb.table["model"].tolist(),
                f"{name_a} vs {name_b}",
                f"{name_a} accuracy (%)",
                f"{name_b} accuracy (%)",
            )
            sec.figures.append((f"Accuracy of each model on {name_a} and on {name_b}.", png))
    if not sec.tables:
        notes.insert(0, "- Comparisons need at least two models on the same benchmark.")
    sec.text = "\n".join(notes)
    return sec


# -- qualitative ---------------------------------------------------------------------------------


def _case_pair(models: Sequence[Run], bench: str) -> tuple[str, str] | None:
    for a, b in _CASE_PAIRS:
        for run in models:
            if compare.has_metric(run, bench, a) and compare.has_metric(run, bench, b):
                return a, b
    return None


def _one_run_per_model(
    runs: Sequence[Run], bench: str, metrics: Sequence[str]
) -> tuple[list[Run], list[Run]]:
    """(the runs kept, the runs left out): a run is left out when an earlier run of the same
    model (fingerprint) already has one of `metrics` on `bench` that it has too."""
    kept: list[Run] = []
    left: list[Run] = []
    for run in runs:
        has = {m for m in metrics if compare.has_metric(run, bench, m)}
        key = run.record.model.fingerprint_key
        if any(
            k.record.model.fingerprint_key == key
            and any(compare.has_metric(k, bench, m) for m in has)
            for k in kept
        ):
            left.append(run)
        else:
            kept.append(run)
    return kept, left


def qualitative_section(
    models: Sequence[Run],
    opt: ReportOptions,
    items_of: _Items | None = None,
    names: Names | None = None,
) -> Section:
    names = names or _labels(models)
    sec = Section(
        "Qualitative cases",
        "Items grouped by what most models do on two metrics of the same item (SugarCrepe++ "
        "App. H): e.g. pass ITT (image) but fail TOT (text only).",
    )
    items_of = items_of or _Items(opt, models)
    notes = []
    for bench in _benchmarks(models):
        pair = _case_pair(models, bench)
        if pair is None:
            continue
        a, b = pair
        runs, twice = _one_run_per_model(
            [r for r in models if bench in _benchmarks([r])], bench, (a, b)
        )
        if twice:
            notes.append(
                f"- {bench}: left out of the cases, a second run of one model: "
                + ", ".join(names[r.record.run_id] for r in twice)
            )
        try:
            df = qualitative.qualitative_cases(
                runs, bench, metric_a=a, metric_b=b, items=items_of(bench), allow_partial=True
            )
        except LexsemError as exc:
            try:  # the captions need the benchmark files: without them, ids only
                df = qualitative.qualitative_cases(
                    runs, bench, metric_a=a, metric_b=b, captions=False, allow_partial=True
                )
                notes.append(f"- {bench}: captions not shown ({exc})")
            except LexsemError as exc2:
                notes.append(f"- {bench}: {exc2}")
                continue
        n_models = len(df.attrs.get("models", []))
        counts = Table(
            f"{bench}: items per case ({label(a)} vs {label(b)}, {n_models} "
            f"model{'' if n_models == 1 else 's'}: "
            f"{', '.join(names[r.record.run_id] for r in runs)})",
            ["case", "items", "share (%)"],
        )
        for case, n in df["case"].value_counts().items():
            counts.rows.append([str(case), str(n), _fmt(100.0 * n / len(df), 1)])
        sub = Section(f"{bench}", tables=[counts])
        if opt.explore_url:
            subsets = list(dict.fromkeys(str(x) for x in df["subset"]))
            counts.notes.append("In the explorer: " + ", ".join(
                [_explore_link(opt, "all items", bench=bench)]
                + [_explore_link(opt, x, bench=bench, subset=x) for x in subsets]
            ))  # fmt: skip
        text_cols = [c for c in ("p1", "p2", "n", "pos", "neg") if c in df.columns]
        for case in qualitative.case_names(a, b)[:2]:
            rows = df[df["case"] == case].head(opt.qualitative_rows)
            if rows.empty:
                continue
            ex = Table(
                f"{bench}: examples — {case}",
                ["subset", "item", *text_cols, f"models passing {label(a)}",
                 f"models passing {label(b)}"],
            )  # fmt: skip
            ex.notes.append(
                f"models passing {label(a)} / {label(b)}: the share of the models that get the "
                f"item right on {label(a)} / on {label(b)}."
            )
            for r in rows.to_dict("records"):
                ex.rows.append(
                    [str(r["subset"]), str(r["item_id"]), *(str(r[c]) for c in text_cols),
                     _fmt(100 * r[f"frac_pass_{a}"], 0) + "%",
                     _fmt(100 * r[f"frac_pass_{b}"], 0) + "%"]
                )  # fmt: skip
            if opt.explore_url:
                ex.notes.append("In the explorer: " + ", ".join(
                    _explore_link(opt, str(r["item_id"]), bench=bench, subset=r["subset"],
                                  item=r["item_id"], metric=b)
                    for r in rows.to_dict("records")
                ))  # fmt: skip
            sub.tables.append(ex)
        sec.subsections.append(sub)
    if not sec.subsections:
        notes.append(
            "- No benchmark has two comparable metrics on the same items in these runs (ITT and "
            "TOT, I2T and T2T, or P1-N and P2-N)."
        )
    if opt.explore_url and sec.subsections:
        sec.text += (
            f"\n\nThe links open these items in `lexsem explore` at {opt.explore_url}; start it "
            "with `lexsem explore RUN...` (the run folders of this report)."
        )
    if notes:
        sec.text += "\n\n" + "\n".join(notes)
    return sec


def _explore_link(opt: ReportOptions, text: str, **query: Any) -> str:
    """`[text](URL)`: the slice of a running explorer (`lexsem explore`) with `query`."""
    from urllib.parse import urlencode

    url = f"{str(opt.explore_url).rstrip('/')}/?{urlencode({k: str(v) for k, v in query.items()})}"
    return f"[{text}]({url})"


# -- the page ------------------------------------------------------------------------------------


def unique(runs: Sequence[Run]) -> list[Run]:
    """The runs with each run id once (the first given): a run listed twice is one run."""
    ids = [r.record.run_id for r in runs]
    return [r for k, r in enumerate(runs) if ids.index(ids[k]) == k]


def analysis_sections(runs: Sequence[Run], opt: ReportOptions | None = None) -> list[Section]:
    """Linguistic priors, similarity, comparisons and qualitative cases for these runs (a run
    given twice counts once)."""
    opt = opt or ReportOptions()
    names = _labels(unique(runs))
    models, blind = split_runs(unique(runs))
    items_of = _Items(opt, unique(runs))
    return [
        priors_section(blind, models, opt, names),
        similarity_section(runs, opt, items_of),
        comparison_section(models, opt, names),
        qualitative_section(models, opt, items_of, names),
    ]


def build_report(
    runs: Sequence[Run],
    opt: ReportOptions | None = None,
    *,
    title: str = "lexsem report",
    extra: Sequence[Section] = (),
) -> str:
    """The whole self-contained HTML page: results tables and bars, the `extra` sections (a
    training run's curves: `lexsem.report.training`), the generative models' paper tables and
    position bias (when any run is generative), the analyses, the runs and their metadata."""
    if not runs:
        raise LexsemError("no runs given")
    runs = unique(runs)
    records = [r.record for r in runs]
    overview = runs_overview_sections(records)
    generative = generative_sections(runs)  # none without generative runs
    sections = [overview[0], *extra, *generative, *analysis_sections(runs, opt), *overview[1:]]
    return render_html(title, sections, runs_metadata(records))

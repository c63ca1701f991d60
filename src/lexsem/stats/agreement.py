"""Inter-annotator agreement of a human study: the raw share of agreeing pairs, Cohen's κ per
annotator pair, Fleiss' κ and Krippendorff's α, each with a seeded percentile bootstrap
interval over items; per task kind and subset of a study's answers table
(docs/human-studies.md, "Agreement").

- Raw agreement: over the items with two ratings or more, the pairs of annotators who gave an
  item the same label ÷ all pairs who rated it (the admin page's percent agreement, as a
  share). Printed beside the chance-corrected statistics, which can be near 0 where people
  agree 90% of the time on a label far more common than the others (the "paradox" of κ at
  high prevalence: Feinstein and Cicchetti, "High agreement but low kappa", 1990).

- Cohen's κ (Cohen, "A coefficient of agreement for nominal scales", 1960) between two
  annotators on the items both rated: κ = (p_o − p_e) / (1 − p_e), p_e from each annotator's
  own label frequencies. BiVLC reports it per pair of annotators and their mean (BiVLC, §3
  step 3 and App. H.3, Table 7), on best-of-K answers read as "an image" or "none".
- Fleiss' κ (Fleiss, "Measuring nominal scale agreement among many raters", 1971) over the
  items with two ratings or more: P_i = (Σ_j n_ij² − n_i) / (n_i (n_i − 1)), P̄ their mean,
  p_j = Σ_i n_ij / Σ_i n_i, P̄_e = Σ_j p_j², κ = (P̄ − P̄_e) / (1 − P̄_e). With the same number
  of ratings on every item this is Fleiss' statistic; items with fewer ratings (a missing or
  skipped answer) enter with their own n_i.
- Krippendorff's α (nominal; Krippendorff, "Computing Krippendorff's Alpha-Reliability",
  2011), computed by the maintained `krippendorff` package, which takes missing ratings as
  they are.

A rating is an annotator's answer to an item; "skip" is no rating. The bootstrap resamples
items (rows of the items × annotators matrix) with replacement, `n_boot` times, from
``numpy.random.default_rng(bootstrap_seed(seed, kind, subset, statistic[, pair]))``
(`lexsem.stats.seeds`), and takes the percentile interval; resamples where the statistic is
undefined (every rating one label: 1 − p_e = 0) are left out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from lexsem.errors import DataError
from lexsem.stats.seeds import bootstrap_seed

__all__ = [
    "ALL",
    "GOLD",
    "AgreementRow",
    "RatingMatrix",
    "agreement",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "rating_matrix",
]

ALL = "_all"  # the row of every subset of a kind together
GOLD = "_gold"  # the gold (attention) items of a kind, apart from the study's items
SKIP = "skip"
MISSING = -1  # the code of "no rating" in a RatingMatrix


@dataclass(frozen=True)
class RatingMatrix:
    """Items × annotators, each cell a label code (`MISSING`: no rating)."""

    items: tuple[str, ...]
    annotators: tuple[str, ...]
    labels: tuple[str, ...]
    codes: np.ndarray  # int (n_items, n_annotators)


def rating_matrix(ratings: Sequence[tuple[str, str, str]], where: str = "answers") -> RatingMatrix:
    """The matrix of (item, annotator, label) triples; "skip" is no rating. Two ratings of one
    item by one annotator are an error naming them."""
    items = tuple(dict.fromkeys(i for i, _, _ in ratings))
    annotators = tuple(sorted({a for _, a, _ in ratings}))
    labels = tuple(sorted({lab for _, _, lab in ratings if lab != SKIP}))
    row = {k: n for n, k in enumerate(items)}
    col = {k: n for n, k in enumerate(annotators)}
    code = {k: n for n, k in enumerate(labels)}
    out = np.full((len(items), len(annotators)), MISSING, dtype=np.int64)
    seen: set[tuple[str, str]] = set()
    for item, who, label in ratings:
        if (item, who) in seen:
            raise DataError(f"{where}: annotator {who} answered item {item} twice")
        seen.add((item, who))
        if label != SKIP:
            out[row[item], col[who]] = code[label]
    return RatingMatrix(items, annotators, labels, out)


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's κ of two label-code vectors over the positions both rated (NaN: undefined)."""
    a, b = np.asarray(a), np.asarray(b)
    both = (a != MISSING) & (b != MISSING)
    a, b = a[both], b[both]
    if len(a) == 0:
        return float("nan")
    k = int(max(a.max(), b.max())) + 1
    p_o = float(np.mean(a == b))
    p_e = float(np.dot(np.bincount(a, minlength=k), np.bincount(b, minlength=k))) / len(a) ** 2
    return (p_o - p_e) / (1.0 - p_e) if p_e < 1.0 else float("nan")


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ of an items × labels count table (items with fewer than two ratings are left
    out; see the module doc); NaN where undefined."""
    n_ij = np.asarray(counts, dtype=np.float64)
    n_i = n_ij.sum(axis=1)
    n_ij, n_i = n_ij[n_i >= 2], n_i[n_i >= 2]
    if len(n_i) == 0:
        return float("nan")
    p_i = ((n_ij**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_j = n_ij.sum(axis=0) / n_i.sum()
    p_bar, p_e = float(p_i.mean()), float((p_j**2).sum())
    return (p_bar - p_e) / (1.0 - p_e) if p_e < 1.0 else float("nan")


def _counts(codes: np.ndarray, n_labels: int) -> np.ndarray:
    out = np.zeros((codes.shape[0], max(n_labels, 1)), dtype=np.int64)
    for j in range(n_labels):
        out[:, j] = (codes == j).sum(axis=1)
    return out


def raw_agreement(counts: np.ndarray) -> float:
    """The share of agreeing pairs: over the items (rows of `counts`, ratings per label), the
    pairs of annotators who gave one item the same label ÷ all pairs of annotators who rated
    it (NaN without pairs). Reported beside κ and α because a chance-corrected statistic can be
    near 0 while people almost always agree (one label far more common than the others)."""
    per_item = counts.sum(axis=1)
    pairs = float((per_item * (per_item - 1)).sum()) / 2
    same = float((counts * (counts - 1)).sum()) / 2
    return same / pairs if pairs else float("nan")


def krippendorff_alpha(codes: np.ndarray) -> float:
    """Krippendorff's α (nominal) of an items × annotators code matrix (`MISSING`: no
    rating), by the `krippendorff` package; NaN where undefined."""
    import warnings

    try:
        import krippendorff
    except ImportError:  # pragma: no cover - the annotate extra installs it
        raise DataError(
            "Krippendorff's alpha needs the krippendorff package: pip install 'lexsem[annotate]'"
        ) from None
    data = np.where(codes == MISSING, np.nan, codes.astype(np.float64)).T  # raters × units
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any() or len(np.unique(data[:, pairable][~np.isnan(data[:, pairable])])) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


Statistic = Callable[[np.ndarray], float]


def bootstrap_interval(
    codes: np.ndarray, statistic: Statistic, n_boot: int, seed: int, confidence: float
) -> tuple[float | None, float | None]:
    """The percentile interval of `statistic` over `n_boot` resamples of the rows of `codes`
    (None, None: no resamples, fewer than two items, or no resample where it is defined)."""
    n = codes.shape[0]
    if n_boot <= 0 or n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    values = np.array([statistic(codes[rng.integers(0, n, n)]) for _ in range(n_boot)])
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(values, [tail, 100.0 - tail])
    return float(lo), float(hi)


@dataclass(frozen=True)
class AgreementRow:
    """One agreement statistic of one task kind and subset (`ALL`: every subset; `GOLD`: the
    gold items)."""

    kind: str
    subset: str
    # "raw_agreement" (the share of agreeing pairs), "cohen_kappa" (one pair),
    # "cohen_kappa_mean", "fleiss_kappa", "krippendorff_alpha"
    statistic: str
    pair: tuple[str, str] | None  # the two annotators of a Cohen's κ
    items: int  # items with two ratings or more (a pair: items both rated)
    annotators: int
    value: float  # NaN where undefined
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["pair"] = "/".join(self.pair) if self.pair else None
        return out


def _pair_stat(i: int, j: int) -> Statistic:
    return lambda m: cohen_kappa(m[:, i], m[:, j])


def _pairs(m: np.ndarray, min_shared: int) -> list[tuple[int, int]]:
    rated = m != MISSING
    return [
        (i, j)
        for i, j in combinations(range(m.shape[1]), 2)
        if int((rated[:, i] & rated[:, j]).sum()) >= min_shared
    ]


def _mean_pairs(pairs: list[tuple[int, int]]) -> Statistic:
    def stat(m: np.ndarray) -> float:
        values = [cohen_kappa(m[:, i], m[:, j]) for i, j in pairs]
        values = [v for v in values if np.isfinite(v)]
        return float(np.mean(values)) if values else float("nan")

    return stat


def matrix_rows(
    matrix: RatingMatrix,
    kind: str,
    subset: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    min_shared: int = 2,
) -> list[AgreementRow]:
    """Every statistic of one rating matrix: the raw share of agreeing pairs, Cohen's κ per
    annotator pair sharing `min_shared` items or more, their mean, Fleiss' κ and
    Krippendorff's α."""
    m = matrix.codes[(matrix.codes != MISSING).sum(axis=1) >= 2]  # items two people rated
    k = len(matrix.labels)
    n_raters = int((m != MISSING).any(axis=0).sum()) if len(m) else 0

    def row(name: str, stat: Statistic, rows: np.ndarray, pair: tuple[str, str] | None = None,
            n_ann: int = n_raters) -> AgreementRow:  # fmt: skip
        names = (kind, subset, name, *(pair or ()))
        lo, hi = bootstrap_interval(rows, stat, n_boot, bootstrap_seed(seed, *names), confidence)
        return AgreementRow(kind, subset, name, pair, len(rows), n_ann, stat(rows), lo, hi)

    out: list[AgreementRow] = [row("raw_agreement", lambda x: raw_agreement(_counts(x, k)), m)]
    pairs = _pairs(m, min_shared)
    for i, j in pairs:
        both = m[(m[:, i] != MISSING) & (m[:, j] != MISSING)]
        who = (matrix.annotators[i], matrix.annotators[j])
        out.append(row("cohen_kappa", _pair_stat(i, j), both, who, 2))
    if len(pairs) > 1:
        out.append(row("cohen_kappa_mean", _mean_pairs(pairs), m))
    out.append(row("fleiss_kappa", lambda x: fleiss_kappa(_counts(x, k)), m))
    out.append(row("krippendorff_alpha", krippendorff_alpha, m))
    return out


def best_of_k_label(answer: str) -> str:
    """BiVLC App. H.3: a best-of-K answer read as whether an image was chosen ("image") or
    none ("none"); "skip" stays no rating."""
    return answer if answer in ("none", SKIP) else "image"


def agreement(
    answers: Any,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    min_shared: int = 2,
    best_of_k_as_image_or_none: bool = True,
    where: str = "answers",
) -> list[AgreementRow]:
    """The agreement statistics of a study's answers table (`pyarrow.Table` with the columns
    `kind`, `item_id`, `subset`, `annotator`, `practice`, `gold`, `answer`): per task kind,
    per subset, all subsets together (`ALL`, when there are several) and the gold items
    (`GOLD`); practice answers are left out. Best-of-K answers are read as BiVLC reads them
    (an image or none) unless `best_of_k_as_image_or_none` is False."""
    need = ("kind", "item_id", "subset", "annotator", "practice", "gold", "answer")
    missing = [c for c in need if c not in answers.column_names]
    if missing:
        raise DataError(f"{where}: not a study's answers table (no column {missing[0]!r})")
    rows = answers.select(list(need)).to_pylist()
    groups: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for n, r in enumerate(rows, 1):
        if r["practice"]:
            continue
        if r["answer"] is None or r["annotator"] is None or r["item_id"] is None:
            raise DataError(f"{where}, row {n}: an answer without its item, annotator or answer")
        label = str(r["answer"])
        if r["kind"] == "best_of_k" and best_of_k_as_image_or_none:
            label = best_of_k_label(label)
        rating = (f"{r['subset']}/{r['item_id']}", str(r["annotator"]), label)
        subsets = [GOLD] if r["gold"] else [str(r["subset"]), ALL]
        for sub in subsets:
            groups.setdefault((str(r["kind"]), sub), []).append(rating)
    out: list[AgreementRow] = []
    kinds = list(dict.fromkeys(k for k, _ in groups))
    for kind in kinds:
        subs = [s for k, s in groups if k == kind and s not in (ALL, GOLD)]
        names = [*subs, *([ALL] if len(subs) > 1 else [])]
        names += [GOLD] if (kind, GOLD) in groups else []
        for sub in names:
            matrix = rating_matrix(groups[(kind, sub)], f"{where} ({kind}, {sub})")
            out += matrix_rows(matrix, kind, sub, n_boot=n_boot, seed=seed,
                               confidence=confidence, min_shared=min_shared)  # fmt: skip
    return out

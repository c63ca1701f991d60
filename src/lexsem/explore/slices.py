"""A slice of the joined table (`RunsTable`): the filters a page's URL carries, checked with
their bounds (a bad value is a 400 naming the parameter), the rows they select in order, and
each run's count and accuracy over them, per benchmark and metric, with an interval: the
percentile bootstrap (`lexsem.stats.bootstrap`) up to `MAX_CI_ROWS` rows, the Wilson score
interval of the proportion (`lexsem.stats.wilson`) above, where a bootstrap per page is too
slow.

- `bench`, `subset`, `metric`, `item`: exact names (`bench` as shown, `NAME · data 2` for
  runs on other data; `item` an item id); a `bench`, `subset` or `metric` that no run has is
  refused with the names there are (`choices`);
- `right=A&wrong=B`: run A (its number on the page, from 0) right and run B wrong;
- `all_wrong`: every model run that scored the row missed it (people's runs not counted);
- `ties`: some run's deciding comparison tied;
- `mrun`, `mmin`, `mmax`: run `mrun`'s margin (`lexsem.explore.margins`) within [mmin, mmax]
  (numbers: `nan` is refused);
- `disagree`: people and models disagree: the people's verdict (every run of people's answers
  that scored the row alike: their majority right or wrong) differs from the models' (right
  when half or more of the model runs that scored it are right);
- `q`: words found, case-insensitive, in the item's id or captions;
- `sort`: `item` (as read), `margin` (run `mrun`'s, smallest first), `disagreement` (models
  split most evenly first);
- `page`, `size`: the page (from 1) and its rows (at most `MAX_PAGE`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from lexsem.explore.runs_table import RunsTable
from lexsem.stats.bootstrap import confidence_interval, micro_mean
from lexsem.stats.wilson import wilson_interval

__all__ = ["MAX_CI_ROWS", "MAX_PAGE", "RunCount", "Slice", "choices", "counts", "select"]

MAX_PAGE = 200
MAX_QUERY = 200
MAX_CI_ROWS = 2000  # the most rows of a run with a bootstrap interval (one per page); Wilson above
_NAMED = (("bench", "view", "benchmark"), ("subset", "subset", "subset"),
          ("metric", "metric", "metric"))  # fmt: skip
_LISTED = 30  # the most valid names an error lists


class Slice(BaseModel):
    """The filters of one slice, as its URL's query parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bench: str | None = Field(None, max_length=300)
    subset: str | None = Field(None, max_length=300)
    metric: str | None = Field(None, max_length=100)
    item: str | None = Field(None, max_length=300)
    right: int | None = Field(None, ge=0, le=10_000)
    wrong: int | None = Field(None, ge=0, le=10_000)
    all_wrong: bool = False
    ties: bool = False
    mrun: int = Field(0, ge=0, le=10_000)
    mmin: float | None = Field(None, ge=-1e9, le=1e9)
    mmax: float | None = Field(None, ge=-1e9, le=1e9)
    disagree: bool = False
    q: str | None = Field(None, max_length=MAX_QUERY)
    sort: Literal["item", "margin", "disagreement"] = "item"
    page: int = Field(1, ge=1, le=1_000_000)
    size: int = Field(50, ge=1, le=MAX_PAGE)

    @field_validator("mmin", "mmax", mode="before")
    @classmethod
    def _a_number(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("nan", "+nan", "-nan"):
            raise PydanticCustomError("not_a_number", "not a number")
        if isinstance(value, float) and value != value:
            raise PydanticCustomError("not_a_number", "not a number")
        return value

    def query(self, **change: object) -> str:
        """This slice's URL query (defaults left out), with `change` applied."""
        from urllib.parse import urlencode

        values = self.model_dump() | change
        defaults = Slice().model_dump()
        kept = {
            k: ("1" if v is True else v)
            for k, v in values.items()
            if v is not None and v != defaults[k] and v is not False
        }
        return urlencode(kept)


def choices(table: RunsTable) -> dict[str, list[str]]:
    """The names each of `bench`, `subset`, `metric` may take: those of the runs' rows."""
    return {name: sorted(set(table.column(col).tolist())) for name, col, _ in _NAMED}


def _unknown(table: RunsTable, name: str, value: str) -> ValueError:
    """The error of a `bench`, `subset` or `metric` that no run has: the names there are."""
    what = next(w for n, _, w in _NAMED if n == name)
    valid = choices(table)[name]
    listed = ", ".join(valid[:_LISTED]) + (f", … ({len(valid)} in all)"
                                           if len(valid) > _LISTED else "")  # fmt: skip
    return ValueError(f"{name}={value!r}: no {what} of that name in these runs; one of: {listed}")


def _check(table: RunsTable, s: Slice) -> None:
    n = len(table.runs)
    for name in ("right", "wrong", "mrun"):
        value = getattr(s, name)
        if value is not None and value >= n:
            raise ValueError(f"{name}={value}: there are {n} runs (0 to {n - 1})")
    if s.mmin is not None and s.mmax is not None and s.mmin > s.mmax:
        raise ValueError(f"mmin={s.mmin} is above mmax={s.mmax}")
    if s.disagree and not any(r.human for r in table.runs):
        raise ValueError("disagree: no run of people's answers among the runs")


def _model_share(table: RunsTable) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the share of the model runs that scored it and got it right, and how many."""
    cols = [k for k, r in enumerate(table.runs) if not r.human]
    hit = table.hit[:, cols]
    scored = (hit >= 0).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (hit == 1).sum(1) / scored
    return share, scored


def select(table: RunsTable, s: Slice, text: Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """The rows of the slice, in its order (every page). `text`: each row's searchable text
    (item id and captions), asked for only when the slice searches. ValueError on a slice that
    does not fit these runs."""
    _check(table, s)
    mask = np.ones(len(table), bool)
    exact = (("bench", "view"), ("subset", "subset"), ("metric", "metric"), ("item", "item_id"))
    for name, col in exact:
        value = getattr(s, name)
        if value is not None:
            match = table.column(col) == value
            if name != "item" and not match.any():
                raise _unknown(table, name, value)
            mask &= match
    if s.right is not None:
        mask &= table.hit[:, s.right] == 1
    if s.wrong is not None:
        mask &= table.hit[:, s.wrong] == 0
    share, scored = _model_share(table)
    if s.all_wrong:
        mask &= (scored > 0) & (share == 0)
    if s.ties:
        mask &= table.tie.any(1)
    m = table.margin[:, s.mrun]
    if s.mmin is not None:
        mask &= m >= s.mmin
    if s.mmax is not None:
        mask &= m <= s.mmax
    if s.disagree:
        humans = [k for k, r in enumerate(table.runs) if r.human]
        h = table.hit[:, humans]
        n_h, right_h = (h >= 0).sum(1), (h == 1).sum(1)
        unanimous = (n_h > 0) & ((right_h == 0) | (right_h == n_h))
        mask &= unanimous & (scored > 0) & ((right_h > 0) != (share >= 0.5))
    if s.q:
        words = s.q.lower().split()
        found = text() if text is not None else table.column("item_id").astype(str)
        for w in words:
            mask &= np.char.find(np.char.lower(found.astype(str)), w) >= 0
    rows = np.flatnonzero(mask)
    if s.sort == "margin":
        rows = rows[np.argsort(np.nan_to_num(m[rows], nan=np.inf), kind="stable")]
    elif s.sort == "disagreement":
        split = np.nan_to_num(np.minimum(share, 1 - share), nan=-1.0)
        rows = rows[np.argsort(-split[rows], kind="stable")]
    return rows


@dataclass(frozen=True)
class RunCount:
    """One run over the slice's rows of one benchmark and metric (`bench` as shown, `metric`):
    rows it scored, its hits, accuracy and interval (percent), and which interval that is
    (`bootstrap`, `wilson`; None when there is none)."""

    run: int
    bench: str
    metric: str
    n: int
    hits: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    interval: Literal["bootstrap", "wilson"] | None = None


def counts(
    table: RunsTable, rows: np.ndarray, *, n_boot: int = 1000, seed: int = 0,
    confidence: float = 0.95,
) -> list[RunCount]:  # fmt: skip
    """Each run's count and accuracy over `rows`, one per benchmark and metric (never pooling
    two metrics), ordered by benchmark, metric and run, runs that scored none of a metric's
    rows left out: the percentile bootstrap interval of
    `lexsem.stats.bootstrap.confidence_interval` up to `MAX_CI_ROWS` rows (none below two
    rows) and the Wilson score interval above (`lexsem.stats.wilson`); none with `n_boot` 0."""
    rows = np.asarray(rows, dtype=np.int64)
    views, metrics = table.column("view")[rows], table.column("metric")[rows]
    groups: dict[tuple[str, str], list[int]] = {}
    for at, key in enumerate(zip(views.tolist(), metrics.tolist(), strict=True)):
        groups.setdefault(key, []).append(at)
    out = []
    for (bench, metric), at in sorted(groups.items()):
        picked = rows[np.asarray(at, dtype=np.int64)]
        for k in range(len(table.runs)):
            h = table.hit[picked, k]
            got = (h[h >= 0] == 1).astype(np.float64)
            if len(got):
                out.append(_count(k, bench, metric, got, n_boot, seed, confidence))
    return out


def _count(
    run: int, bench: str, metric: str, got: np.ndarray, n_boot: int, seed: int,
    confidence: float,
) -> RunCount:  # fmt: skip
    n, hits = len(got), int(got.sum())
    lo: float | None
    hi: float | None
    kind: Literal["bootstrap", "wilson"] | None
    if n_boot == 0:
        lo, hi, kind = None, None, None
    elif n > MAX_CI_ROWS:
        ci = wilson_interval(hits, n, confidence)
        assert ci is not None  # n > 0
        (lo, hi), kind = ci, "wilson"
    else:
        lo, hi = confidence_interval([got], micro_mean, n_boot, seed, confidence)
        kind = "bootstrap" if lo is not None else None
    return RunCount(run, bench, metric, n, hits, 100.0 * got.mean(), lo, hi, kind)

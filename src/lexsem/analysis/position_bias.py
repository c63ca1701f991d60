"""Position bias of multiple-choice runs: for each (benchmark, task) and ordering of the
options, the share of the answers naming an option that name each position, and the share of
all answers of each kind (naming an option, none, multiple, refusal, unparseable), read from the
run's per-item answers. A model without preference names each position equally often; one that
prefers a position scores high where the right option stands there and low elsewhere
(SugarCrepe++, App. G.1 reorders the options)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lexsem.tasks.choice import ORDERINGS, PROMPTS
from lexsem.tasks.choice_task import CHOICE_TASKS, CODES, expected_option

# the kinds of answers naming no single option, in `CODES`' order
NO_OPTION = tuple(CODES)


@dataclass
class OrderingShares:
    """The answers under one ordering (or `all` of them pooled): how many, the share (%) of
    those naming an option that name each position, and the share (%) of all answers of each
    kind (`option`, `none`, `multiple`, `refusal`, `unparseable`)."""

    ordering: str
    right: int | None  # the right option (1-based); None for the pooled row
    answers: int
    positions: dict[int, float]
    kinds: dict[str, float]


@dataclass
class PositionBias:
    model: str
    benchmark: str
    task: str
    rows: list[OrderingShares]


def _shares(ordering: str, right: int | None, values: np.ndarray, n_options: int) -> OrderingShares:
    values = values[np.isfinite(values)]
    n = len(values)
    named = values[values >= 1]
    positions = {
        k: 100.0 * float(np.sum(named == k)) / len(named) if len(named) else 0.0
        for k in range(1, n_options + 1)
    }
    kinds = {"option": 100.0 * len(named) / n if n else 0.0}
    for kind in NO_OPTION:
        kinds[kind] = 100.0 * float(np.sum(values == CODES[kind])) / n if n else 0.0
    return OrderingShares(ordering, right, n, positions, kinds)


def position_bias(run: Any, name: str | None = None) -> list[PositionBias]:
    """The position bias of each (benchmark, multiple-choice task) of a `Run`, read from its
    per-item answers (one row per item: the answers repeat on every metric's row); shown under
    `name` (default: the model's name)."""
    record = run.record
    tasks = [t for t in dict.fromkeys(r.task for r in record.results) if t in CHOICE_TASKS]
    if not tasks:
        return []
    df = run.items.to_pandas()
    out = []
    chosen = df[df["task"].isin(tasks)]
    for (bench, task), part in chosen.groupby(["benchmark", "task"], sort=False):
        prompt = PROMPTS[CHOICE_TASKS[task]]
        one = part[part["metric"] == part["metric"].iloc[0]]
        orders = [o for o in ORDERINGS[prompt.n_options] if f"answer_{o}" in one]
        cols = {o: one[f"answer_{o}"].to_numpy(dtype=float) for o in orders}
        rows = [_shares(o, expected_option(prompt, o), cols[o], prompt.n_options) for o in orders]
        if len(orders) > 1:
            pooled = np.concatenate([cols[o] for o in orders])
            rows.append(_shares("all", None, pooled, prompt.n_options))
        out.append(PositionBias(name or record.model.name, str(bench), str(task), rows))
    return out

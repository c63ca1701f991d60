"""A task as people answer it: the run of a human study (`lexsem annotate human-run`) is scored
by this reading of the benchmark's own task, under the task's name and metric names, so that
`compare`, the paired tables and the CIs treat it as any run.

A person is asked questions ("queries"), not for scores. The queries of a task:

- BiVLC and Winoground (quad items): the four directional comparisons of `lexsem.tasks.quad`
  (`DIRECTIONS`: the query of image 0 is Ipos2T, of image 1 Ineg2T, of caption 0 Tpos2I, of
  caption 1 Tneg2I); the task's other metrics are made from them by `quad_metrics` (I2T, T2I
  and Group; Winoground's text, image and group), as a model's are made from its scores
  (BiVLC §4: "Combining the different annotations derived from an instance, we obtain human
  performance on our three metrics").
- every other task: its main metric, the item's whole question (SugarCrepe++ §3, "select the
  negative caption"; the SugarCrepe pair question). The models' secondary metrics (P1-N,
  P2-N, P1 vs N) compare scores and have no human counterpart: the reading has the main
  metric only.

Each query of an item has two columns (kind `votes`, filled by a model of people's answers,
`lexsem.models.item_votes`): `right_<query>`, the annotators who answered it right, and
`wrong_<query>`, those who did not (no value: not asked). The query's hit is the majority:
`right > wrong`, compared by `lexsem.stats.ties.beats` as two scores are, so that an even
split is a tie (a failure under the `strict` tie policy, a hit under `lenient`). With one
annotator the hit is their answer. A metric is scored over the items whose every query it
needs was answered (`Task.metric_columns`).
"""

from __future__ import annotations

from lexsem.stats.ties import Hits, TiePolicy, beats
from lexsem.tasks.base import Column, Columns, Task
from lexsem.tasks.quad import DIRECTIONS, NEEDS, WINOGROUND_NAMES, quad_metrics

__all__ = ["RIGHT", "WRONG", "queries", "voted_task"]

RIGHT, WRONG = "right_", "wrong_"  # the prefixes of a query's two columns


def queries(task: Task) -> tuple[str, ...]:
    """The queries people answer of `task` (see the module doc)."""
    return DIRECTIONS if task.item_kind == "quad" else task.metrics[:1]


def _needs(task: Task, metric: str) -> tuple[str, ...]:
    """The queries `metric` of `task` is made from."""
    return NEEDS[_bivlc_name(metric)] if task.item_kind == "quad" else (metric,)


def _bivlc_name(metric: str) -> str:
    """A quad task's metric by BiVLC's name (Winoground's text / image are I2T / T2I)."""
    return WINOGROUND_NAMES.get(metric, metric)


def _columns(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p + q for q in names for p in (RIGHT, WRONG))


def _no_item(item: object) -> None:
    return None


def voted_task(task: Task) -> Task:
    """`task` as people answer it (see the module doc): same name, metrics (the main one only,
    but for quad tasks), labels and chance levels; its columns are the queries' votes."""
    asked = queries(task)
    metrics = task.metrics if task.item_kind == "quad" else task.metrics[:1]

    def compute(c: Columns, policy: TiePolicy) -> dict[str, Hits]:
        hits = {q: beats(c[RIGHT + q], c[WRONG + q], policy) for q in asked}
        if task.item_kind != "quad":
            return hits
        made = quad_metrics(hits)
        return {m: made[_bivlc_name(m)] for m in metrics}

    return Task(
        task.name,
        f"{task.description} (as people answer it: the majority of their votes per query)",
        task.item_kind,
        "answer",
        tuple(Column(name, "votes", _no_item) for name in _columns(asked)),
        metrics,
        compute,
        chance={m: v for m, v in task.chance.items() if m in metrics},
        labels={m: v for m, v in task.labels.items() if m in metrics},
        metric_columns={m: _columns(_needs(task, m)) for m in metrics},
    )

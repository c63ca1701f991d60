"""A yes/no answer per caption: SugarCrepe++ prompt sensitivity (App. G.1, Table 17).

The paper asks BLIP, for each caption of a triplet (I, P1, P2, N) on its own, `Does the
following caption match the image: <caption>? Provide 'yes' or 'no' as response` and four
paraphrases (the `vqa:` question presets `t17_1` ... `t17_5`), and reports one accuracy per
subset and prompt. It does not state what makes an item correct, how an answer is read from the
model, or what an answer other than yes / no counts as.

Decided here: an item is a hit when the answers are yes to P1, yes to P2 and no to N (`yesno`,
the main metric; each part is reported too: `yes_p1`, `yes_p2`, `no_n`). Each pair score is read
as P(yes) / (P(yes) + P(no)), what `vqa:MODEL?score=vqa_norm` gives: the answer is yes when the
score is > 0.5 and no when it is < 0.5; exactly 0.5 (P(yes) = P(no)) is a tie, a failure of
either answer under the strict tie policy and a success under `lenient`. Only the two answers are
compared, so there is no third outcome. A NaN score (an image skipped) answers neither.

A task cannot know whether a model's scores are probabilities: the evaluator lets only a pair
scorer run it (`Task.probability_scores`; a dual encoder's cosine never is one), and the scores
are checked to lie in [0, 1] (a `vqa_diff` or logit score is refused). `score=vqa`, P(yes) alone,
also lies in [0, 1] and is not detected: it says yes only when P(yes) > 0.5.
"""

from __future__ import annotations

import numpy as np

from lexsem.errors import LexsemError
from lexsem.stats.ties import Hits, TiePolicy, all_of, beats
from lexsem.tasks.base import Columns, Task
from lexsem.tasks.triplet import IMAGE_COLUMNS, S_I_N, S_I_P1, S_I_P2

THRESHOLD = 0.5  # P(yes) / (P(yes) + P(no)) above it: "yes"; below it: "no"


def says_yes(score: np.ndarray, policy: TiePolicy = "strict") -> Hits:
    """The answer is yes: score > 0.5 (>= under `lenient`); a score of 0.5 is a tie."""
    score = np.asarray(score, dtype=float)
    return beats(score, np.full_like(score, THRESHOLD), policy)


def says_no(score: np.ndarray, policy: TiePolicy = "strict") -> Hits:
    """The answer is no: score < 0.5 (<= under `lenient`); a score of 0.5 is a tie."""
    score = np.asarray(score, dtype=float)
    return beats(np.full_like(score, THRESHOLD), score, policy)


def yesno_hits(
    si1: np.ndarray, si2: np.ndarray, sin: np.ndarray, policy: TiePolicy = "strict"
) -> tuple[Hits, Hits, Hits, Hits]:
    """(yes to P1 and P2 and no to N, yes to P1, yes to P2, no to N) per item."""
    p1 = says_yes(si1, policy)
    p2 = says_yes(si2, policy)
    n = says_no(sin, policy)
    return all_of(p1, p2, n), p1, p2, n


def check_probabilities(columns: Columns) -> None:
    """Refuse scores that cannot be probabilities (a finite value outside [0, 1])."""
    for name, values in columns.items():
        v = np.asarray(values, dtype=float)
        bad = v[np.isfinite(v) & ((v < 0.0) | (v > 1.0))]
        if bad.size:
            raise LexsemError(
                f"task 'yesno' reads each score as P(yes) / (P(yes) + P(no)) and answers yes "
                f"above {THRESHOLD}, but {bad.size} score(s) of {name} lie outside [0, 1] "
                f"(e.g. {bad[0]:.4g}): the model's scores are not probabilities; use a pair "
                "scorer whose scores are, such as vqa:MODEL?score=vqa_norm"
            )


def _yesno(c: Columns, policy: TiePolicy) -> dict[str, Hits]:
    check_probabilities({k: c[k] for k in (S_I_P1, S_I_P2, S_I_N)})
    both, p1, p2, n = yesno_hits(c[S_I_P1], c[S_I_P2], c[S_I_N], policy)
    return {"yesno": both, "yes_p1": p1, "yes_p2": p2, "no_n": n}


YESNO = Task(
    "yesno",
    "SugarCrepe++ Table 17 (prompt sensitivity), opt-in: each caption asked alone; hit = yes to "
    "P1 and P2 and no to N (the paper states no rule; ours). Reads score > 0.5 as yes, < 0.5 as "
    "no (0.5: a tie): needs P(yes)/(P(yes)+P(no)), vqa:MODEL?score=vqa_norm",
    "triplet",
    "image",
    IMAGE_COLUMNS,
    ("yesno", "yes_p1", "yes_p2", "no_n"),
    _yesno,
    chance={"yesno": 12.5, "yes_p1": 50.0, "yes_p2": 50.0, "no_n": 50.0},  # a fair coin per caption
    labels={"yesno": "Yes/No", "yes_p1": "yes to P1", "yes_p2": "yes to P2", "no_n": "no to N"},
    probability_scores=True,
)

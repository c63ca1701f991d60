"""The task registry: task name -> `Task` (lazy entries; the blind task depends on the item kind
and is built by `tasks.blind.blind_task`)."""

from __future__ import annotations

from lexsem.registry import Registry
from lexsem.tasks.base import Task

TASKS: Registry[Task] = Registry(
    "task",
    Task,
    {
        "tot": "lexsem.tasks.triplet:TOT",
        "t2t": "lexsem.tasks.triplet:T2T",
        "itt": "lexsem.tasks.triplet:ITT",
        "i2t": "lexsem.tasks.triplet:I2T",
        "yesno": "lexsem.tasks.yesno:YESNO",
        "pair": "lexsem.tasks.pair:PAIR",
        "bivlc": "lexsem.tasks.quad:BIVLC",
        "winoground": "lexsem.tasks.quad:WINOGROUND",
        "aro_vg": "lexsem.tasks.multi:ARO_VG",
        "aro_order": "lexsem.tasks.multi:ARO_ORDER",
        "choice_scpp1": "lexsem.tasks.choice_task:CHOICE_SCPP1",
        "choice_scpp2": "lexsem.tasks.choice_task:CHOICE_SCPP2",
        "choice_scpp3": "lexsem.tasks.choice_task:CHOICE_SCPP3",
        "choice_scpp_order": "lexsem.tasks.choice_task:CHOICE_SCPP_ORDER",
        "choice_sc_gpt4v": "lexsem.tasks.choice_task:CHOICE_SC_GPT4V",
    },
)

# VISLA calls the text-only triplet task T2T, SugarCrepe++ calls it TOT (and ITT / I2T for the
# image task): either name selects the same task of a triplet benchmark.
SYNONYMS = {"tot": "t2t", "t2t": "tot", "itt": "i2t", "i2t": "itt"}
BLIND = "blind"


def get_task(name: str) -> Task:
    return TASKS.get(name)


def task_names() -> list[str]:
    """Every task name, `blind` included."""
    return [*TASKS.names(), BLIND]


def find_task(name: str) -> Task | None:
    """The registered task `name`, or None (`blind` and unknown names)."""
    return TASKS.get(name) if name in TASKS else None

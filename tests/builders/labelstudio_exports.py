"""Label Studio's JSON export, by hand and as the real one writes it ("Label Studio JSON format
of annotated tasks"): an annotation with a numeric `completed_by`, `lead_time`, `created_at`,
`was_cancelled`, and a `choices` result whose `to_name` names the object the kind's config
labels; and the place where a task shows an option, found as a person finds it, by what is
shown (never through lexsem's key)."""

from __future__ import annotations

from typing import Any

from lexsem.annotate.store import StoredUnit


def annotation(user: Any, choice: str, *, to_name: str = "context", **extra: Any) -> dict:
    """One annotation of `user` choosing `choice` (a position or a fixed choice)."""
    result = [{"id": "r1", "from_name": "choice", "to_name": to_name, "type": "choices",
               "origin": "manual", "value": {"choices": [choice]}}]  # fmt: skip
    return {"id": 1001, "result": result, "was_cancelled": False, "ground_truth": False,
            "created_at": "2025-03-09T22:16:08.728353Z", "updated_at": "2025-03-09T22:16:08Z",
            "lead_time": 4.288, "result_count": 0, "task": 1, "completed_by": user,
            **extra}  # fmt: skip


def shown_position(data: dict[str, Any], unit: StoredUnit, option: str | None) -> int:
    """The 1-based place where the task `data` shows the option `option` of the study's
    `unit`: its caption, or its image's file (named by the image's sha256)."""
    (o,) = [o for o in unit.payload["options"] if o["id"] == option]
    k = 1
    while f"option{k}" in data:
        shown = data[f"option{k}"]
        if (o.get("image") and o["image"] in shown) or (o.get("text") and o["text"] == shown):
            return k
        k += 1
    raise AssertionError(f"{option} is not shown in {data}")

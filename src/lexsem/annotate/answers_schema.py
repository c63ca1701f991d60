"""The answers table's columns and types, the one interface between a study and what reads its
answers: `lexsem.annotate.answers` (the study file exported), `lexsem.annotate.labelstudio`
(Label Studio's export read back), and the agreement statistics, human run and fold-back that
read the table (docs/human-studies.md, "The answers table").

Columns: ``study``, ``kind``, ``item_id`` (the benchmark item id or a build row's
``source:source_id``; BiVLC queries add ``#image0`` etc., `lexsem.annotate.kinds.query_id`),
``subset``, ``benchmark`` (the selector), ``annotator`` (opaque id), ``practice``, ``gold``,
``options`` (the option ids in the order shown), ``answer`` (an option id, "none", "both",
"accept" / "edit" / "reject", or "skip"), ``correct`` (null where the item has no right
answer), ``edit`` (the edited text of a validation item, else null), ``seconds``,
``answered_at`` (ISO time, UTC), ``seed`` (the annotator's randomisation seed).
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["ANSWERS_SCHEMA"]

ANSWERS_SCHEMA = pa.schema(
    [
        ("study", pa.string()),
        ("kind", pa.string()),
        ("item_id", pa.string()),
        ("subset", pa.string()),
        ("benchmark", pa.string()),
        ("annotator", pa.string()),
        ("practice", pa.bool_()),
        ("gold", pa.bool_()),
        ("options", pa.list_(pa.string())),
        ("answer", pa.string()),
        ("correct", pa.bool_()),
        ("edit", pa.string()),
        ("seconds", pa.float64()),
        ("answered_at", pa.string()),
        ("seed", pa.int64()),
    ]
)

"""What lexsem and Label Studio exchange (docs/human-studies.md, "Label Studio"): the projects
a study becomes, their labelling configurations, and the key that maps a Label Studio task back
to the study's item and option roles.

A study becomes one Label Studio project per task kind (`project_name`: ``tot``, ``itt``,
``i2t`` and ``t2i`` for BiVLC's two directions, ...). A task's ``data`` holds what is shown
(``context``, ``base_text`` / ``base_image``, ``option1``, ``option2``, ..., ``edit_text``),
the study's name (``lexsem_study``) and an opaque task key (``lexsem_task``): nothing in it
names an option's role, the item, or whether it is a practice or gold item. The key file
(`ExportKey`, ``lexsem-key.json`` beside the projects, never uploaded) maps each task key to
its kind, item, subset, benchmark, the option ids in the order shown, the right option and
the seed of that order.

`labelling_config` is a project's configuration: ``Header`` with the kind's question, a
``Text`` ``context``, the base (``Image`` or ``Text`` named ``base``), the options (``Image``
or ``Text`` named ``option1`` ...) and one ``Choices`` control named ``choice`` over the
positions (``1``, ``2``, ...) and the kind's fixed choices (``none``, ``both``, ``accept`` /
``edit`` / ``reject``), labelling ``base`` where the kind has one, else ``context``; a
``TextArea`` named ``edit`` for the corrected caption of a validation item.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import quoteattr

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lexsem.annotate.instructions import QUESTIONS
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.errors import DataError
from lexsem.jsonl import read_json

__all__ = [
    "KEY_FILE",
    "KEY_FORMAT",
    "ExportKey",
    "KeyTask",
    "labelling_config",
    "project_name",
    "read_key",
    "task_key",
]

#: The key file's name, beside the project folders (never uploaded to Label Studio).
KEY_FILE = "lexsem-key.json"
KEY_FORMAT = "lexsem-labelstudio-key/1"


def project_name(kind: str) -> str:
    """The Label Studio project (and folder) of a study kind: BiVLC's directions as ``i2t``
    and ``t2i``, other kinds by their name."""
    return kind.removeprefix("bivlc_")


def task_key(secret: str, unit_id: int) -> str:
    """A task's opaque key: an HMAC of its unit under the study's secret (stable across
    exports of one study, and telling nothing of the unit's place or role)."""
    return hmac.new(secret.encode(), f"labelstudio:{unit_id}".encode(), hashlib.sha256).hexdigest()[
        :20
    ]


def labelling_config(
    kind: str, n_options: int, *, image_base: bool, image_options: bool, has_base: bool
) -> str:
    """The Label Studio labelling configuration of a project of `kind` (see the module doc)."""
    parts = ["<View>", f"  <Header value={quoteattr(QUESTIONS[kind])}/>"]
    parts.append('  <Text name="context" value="$context"/>')
    if has_base and image_base:
        parts.append('  <Image name="base" value="$base_image" maxWidth="512px"/>')
    elif has_base:
        parts.append('  <Text name="base" value="$base_text"/>')
    for k in range(1, n_options + 1):
        parts.append(f'  <Header value="({k})"/>')
        if image_options:
            parts.append(f'  <Image name="option{k}" value="$option{k}" maxWidth="384px"/>')
        else:
            parts.append(f'  <Text name="option{k}" value="$option{k}"/>')
    to = "base" if has_base else "context"
    parts.append(f'  <Choices name="choice" toName="{to}" choice="single" required="true">')
    for k in range(1, n_options + 1):
        parts.append(f'    <Choice value="{k}"/>')
    for fixed in FIXED_CHOICES[kind]:
        parts.append(f"    <Choice value={quoteattr(fixed)}/>")
    parts.append("  </Choices>")
    if kind == "validate":
        parts.append('  <TextArea name="edit" toName="context" value="$edit_text" '
                     'placeholder="The corrected caption" maxSubmissions="1"/>')  # fmt: skip
    parts.append("</View>")
    return "\n".join(parts) + "\n"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class KeyTask(_Model):
    """What one Label Studio task is: its project, kind, item, the option ids in the order
    shown (``option1`` is ``options[0]``), the right option (None where the item has none),
    whether it is a practice or gold item, and the seed of its option order."""

    project: str
    kind: str
    item_id: str
    subset: str
    benchmark: str
    options: list[str]
    correct: str | None
    practice: bool
    gold: bool
    seed: int = Field(ge=0, le=2**63 - 1)


class ExportKey(_Model):
    """The key file of one export of a study: its name, overlap, projects (name -> kind) and
    tasks (task key -> `KeyTask`)."""

    format: Literal["lexsem-labelstudio-key/1"] = KEY_FORMAT
    study: str
    overlap: int = Field(ge=1)
    projects: dict[str, str]
    tasks: dict[str, KeyTask]


def read_key(path: str | Path) -> ExportKey:
    """The key file at `path`, or a one-line `DataError` saying what is wrong with it."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"no such key file (the export's {KEY_FILE})", file=path)
    raw = read_json(path, what="a lexsem Label Studio key file")
    if not isinstance(raw, dict) or raw.get("format") != KEY_FORMAT:
        raise DataError(
            f'not a lexsem Label Studio key file (no "format": "{KEY_FORMAT}"): give the '
            f"{KEY_FILE} that labelstudio-export wrote",
            file=path,
        )
    try:
        return ExportKey.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        raise DataError(f"{at}: {first['msg']}", file=path) from None

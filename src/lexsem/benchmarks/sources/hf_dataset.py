"""What a Hugging Face benchmark dataset is to lexsem: its Hub id, split and revision, and the
columns its rows are read from (`QuadFields`: BiVLC, Winoground; `MultiFields`: ARO). Each
benchmark file declares its own (`lexsem.benchmarks.bivlc`, `winoground`, `aro`), so a mirror
with other column names needs only another declaration, not new code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class QuadFields:
    """Columns of a quad dataset: (image0, caption0) and (image1, caption1) are the true pairs."""

    image0: str
    caption0: str
    image1: str
    caption1: str
    id: str | None = None  # item id column; None -> the row number
    groups: tuple[str, ...] = ()  # copied into QuadItem.group as (column, str(value))
    subset: tuple[str, ...] = ()  # columns joined with "_" into item.subset; () -> the default


@dataclass(frozen=True)
class MultiFields:
    """Columns of a multi-caption dataset: one image, the true caption first."""

    image: str
    captions: tuple[str, ...]  # captions[0] is the true caption
    id: str | None = None  # item id column; None -> the row number
    label: str | None = None  # relation / attribute column (a list value is joined with "_")
    bbox: str | None = None  # crop box column: struct {x, y, w, h} or a list [x, y, w, h]


@dataclass(frozen=True)
class HFDataset:
    """One benchmark published on the Hub: where it is, which columns hold what, how many rows
    and items it has. `revision` pins a Hub revision (None: the default branch)."""

    key: str  # lexsem name, used in image refs
    repo: str  # Hugging Face Hub dataset id
    split: str
    kind: Literal["quad", "multi"]
    fields: QuadFields | MultiFields
    subset: str  # item.subset when the fields do not derive one
    gated: bool = False
    expected_rows: int | None = None
    # Items per item.subset, when known (BiVLC: Table 1 of the paper / 4 retrieval examples each).
    expected_subsets: tuple[tuple[str, int], ...] = ()
    notes: str = ""
    revision: str | None = None

    @property
    def image_columns(self) -> tuple[str, ...]:
        f = self.fields
        return (f.image0, f.image1) if isinstance(f, QuadFields) else (f.image,)

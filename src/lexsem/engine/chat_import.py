"""Import recorded answers into a chat model's request store, each under exactly the key its
real request has (`lexsem.engine.chat.chat_key`: the model, the rendered conversation, the
images by content; the conversation built by `lexsem.engine.conversations.item_request`, as a
run builds it), so a later `lexsem ask --replay-only` with the same model, prompt and shots
serves them without sending anything.

An imported record is `{"text": answer, "response": {"imported_from": <file name>, "where":
"line 3"}}` (`lexsem.engine.chat.is_imported`). Answers `null` (none received) are not
imported: the real request is sent when asked. An answer is never replaced by a different one
(the import stops before writing anything, naming the item) unless `force`; two different
answers in the file for one request are an error naming both places.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lexsem.engine.chat import ImageKeys, chat_key
from lexsem.engine.request_store import RequestStore
from lexsem.errors import CacheError, DataError
from lexsem.models.chat import ChatRequest

__all__ = ["ImportRow", "ImportStats", "import_answers"]


@dataclass(frozen=True)
class ImportRow:
    """One answer to import: where it is in the file, what it answers (for messages), the
    request it answers and its text (None: no answer)."""

    where: str
    what: str
    request: ChatRequest
    text: str | None


@dataclass
class ImportStats:
    n_records: int = 0  # records read
    n_written: int = 0  # stored now
    n_present: int = 0  # stored already, with the same answer
    n_replaced: int = 0  # stored already with another answer, replaced (force)
    n_null: int = 0  # no answer: not imported


def import_answers(
    model: Any, rows: Sequence[ImportRow], store: RequestStore, source: str | Path, *,
    force: bool = False,
) -> ImportStats:  # fmt: skip
    """Store the answers of `rows` (read from `source`) in `store` (see the module doc)."""
    source = Path(source)
    if not store.writable:
        raise CacheError(f"the request store {store.path} cannot be written: nothing imported")
    stats = ImportStats(n_records=len(rows))
    image_keys = ImageKeys()
    wanted: dict[str, ImportRow] = {}
    for row in rows:
        if row.text is None:
            stats.n_null += 1
            continue
        key = chat_key(model, row.request, image_keys)
        first = wanted.setdefault(key, row)
        if first.text != row.text:
            raise DataError(
                f"{source}, {row.where}: another answer for {row.what} than {first.where}'s "
                f"({row.text!r}, not {first.text!r}); nothing was imported"
            )
    stored = store.get_records(list(wanted))
    replace = _conflicts(wanted, stored, source, force)
    new = [k for k in wanted if k not in stored]
    stats.n_present = len(wanted) - len(new) - len(replace)
    stats.n_replaced = len(replace)
    store.put_records(new, [_record(wanted[k], source) for k in new])
    if replace:
        store.put_records(replace, [_record(wanted[k], source) for k in replace], replace=True)
    stats.n_written = len(new)
    return stats


def _conflicts(
    wanted: dict[str, ImportRow], stored: dict[str, Any], source: Path, force: bool
) -> list[str]:
    """Keys stored with another answer; DataError naming them unless `force`."""
    out = [
        k for k, row in wanted.items()
        if k in stored and (not isinstance(stored[k], dict) or stored[k].get("text") != row.text)
    ]  # fmt: skip
    if out and not force:
        row = wanted[out[0]]
        old = stored[out[0]].get("text") if isinstance(stored[out[0]], dict) else None
        more = f" (and {len(out) - 1} more)" if len(out) > 1 else ""
        raise DataError(
            f"{source}, {row.where}: the store already has another answer for {row.what} "
            f"({old!r}, not {row.text!r}){more}; nothing was imported (--force replaces them)"
        )
    return out


def _record(row: ImportRow, source: Path) -> dict[str, Any]:
    return {"text": row.text, "response": {"imported_from": source.name, "where": row.where}}

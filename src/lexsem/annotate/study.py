"""A study: its creation from its settings (`lexsem.annotate.config.StudySettings`) as one
SQLite file, written whole or not at all, the settings read back, and the annotator links it
hands out.

A study holds *units* (queries, `lexsem.annotate.kinds`) grouped by item: overlap and quotas
count items, so an annotator who takes an item answers all its queries (BiVLC's 4 queries
per instance). Practice units are served first to everyone, with feedback; gold units go to
everyone, mixed into their items; main units go to `overlap` annotators each.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from lexsem.annotate import store
from lexsem.annotate.config import StudySettings
from lexsem.annotate.images import ImageSink
from lexsem.annotate.kinds import Query
from lexsem.annotate.order import annotator_seed
from lexsem.annotate.security import hash_token, new_secret, new_token
from lexsem.atomic import atomic_path
from lexsem.errors import LexsemError

__all__ = [
    "StudyLinks",
    "StudyUnits",
    "add_annotators",
    "create_study",
    "join_annotator",
    "load_settings",
    "revoke_link",
    "rotate_admin",
]


@dataclass
class StudyUnits:
    """The queries of a study, each with the key of the item it belongs to."""

    main: list[tuple[str, Query]]
    practice: list[tuple[str, Query]] = field(default_factory=list)
    gold: list[tuple[str, Query]] = field(default_factory=list)


@dataclass(frozen=True)
class StudyLinks:
    """Secrets shown once: the admin token, the join token, and annotator tokens."""

    admin: str
    join: str
    annotators: list[tuple[str, str]]  # (annotator id, token)

    def urls(self, base: str) -> dict[str, Any]:
        base = base.rstrip("/")
        return {
            "admin": f"{base}/admin/{self.admin}",
            "join": f"{base}/join/{self.join}",
            "annotators": {a: f"{base}/a/{t}" for a, t in self.annotators},
        }


def create_study(
    path: str | Path,
    settings: StudySettings,
    make_units: Callable[[Callable[[str], str]], StudyUnits],
    read_image: Callable[[str], bytes],
    *,
    annotators: int = 0,
) -> StudyLinks:
    """Write the study file at `path` (refused if it exists; mode 0600 whatever the umask: it
    holds the study's secret): `make_units(sink)` gives the queries, naming images through
    `sink(ref) -> sha256`, which stores them in the study."""
    path = Path(path)
    if path.exists():
        raise LexsemError(f"{path}: exists; a study holds answers and is never overwritten")
    with atomic_path(path) as tmp:
        os.chmod(tmp, 0o600)  # it holds the study's secret; SQLite gives its -wal/-shm the same
        con = store.connect(tmp, create=True)
        try:
            store.create_schema(con)
            with store.write(con):
                units = make_units(ImageSink(con, read_image))
                if not units.main:
                    raise LexsemError("the study has no items")
                _insert_units(con, units)
                admin, join = new_token(), new_token()
                store.set_meta(con, "settings", settings.model_dump(mode="json"))
                store.set_meta(con, "secret", new_secret())
                store.set_meta(con, "admin_hash", hash_token(admin))
                store.set_meta(con, "join_hash", hash_token(join))
                store.set_meta(con, "created_at", store.now_iso())
                tokens = _add(con, settings, annotators)
            store.checkpoint(con)
        finally:
            con.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    return StudyLinks(admin, join, tokens)


def _insert_units(con: store.Connection, units: StudyUnits) -> None:
    position = 0
    for practice, gold, group in ((True, False, units.practice), (False, True, units.gold),
                                  (False, False, units.main)):  # fmt: skip
        for key, q in group:
            if gold and q.correct is None:
                raise LexsemError(f"gold item {q.item_id} ({q.kind}) has no right answer")
            payload = {
                "options": [dataclasses.asdict(o) for o in q.options],
                "base_text": q.base_text,
                "base_image": q.base_image,
                "context": [list(c) for c in q.context],
                "edit_text": q.edit_text,
            }
            store.add_unit(
                con, kind=q.kind, item_id=q.item_id, subset=q.subset, benchmark=q.benchmark,
                item_key=key, practice=practice, gold=gold, correct=q.correct, payload=payload,
                position=position,
            )  # fmt: skip
            position += 1


def _add(
    con: store.Connection, settings: StudySettings, n: int, *, source: str = "link"
) -> list[tuple[str, str]]:
    count = store.annotator_count(con)
    hours = settings.link_hours
    expires = None if hours is None else store.clock() + 3600.0 * hours
    out = []
    for k in range(count + 1, count + n + 1):
        aid, token = f"a{k:04d}", new_token()
        store.add_annotator(
            con, aid, hash_token(token), annotator_seed(settings.seed, aid),
            consented=source == "join", source=source, expires_at=expires,
        )  # fmt: skip
        out.append((aid, token))
    return out


def add_annotators(con: store.Connection, n: int) -> list[tuple[str, str]]:
    """`n` new annotators (opaque ids a0001, ...) and their tokens, committed."""
    settings = load_settings(con)
    with store.write(con):
        return _add(con, settings, n)


def join_annotator(con: store.Connection) -> tuple[str, str] | None:
    """A participant who consented through the join link: their id and token (committed), or
    None where the join link has admitted `max_participants` already."""
    settings = load_settings(con)
    with store.write(con):
        cap = settings.max_participants
        if cap is not None and store.join_count(con) >= cap:
            return None
        ((aid, token),) = _add(con, settings, 1, source="join")
    return aid, token


def revoke_link(con: store.Connection, which: str) -> str:
    """Revoke one link, named by its token (a personal link's or the join link's) or by an
    annotator id; a revoked personal link's unanswered items go back to the pool. What was
    revoked, in words."""
    th = hash_token(which)
    if store.get_meta(con, "join_hash") == th:
        with store.write(con):
            store.set_meta(con, "join_hash", None)
        return "the join link"
    who = store.annotator_by_token(con, th)
    if who is None and which.isascii():  # an id (a0001, ...); SQLite takes no lone surrogate
        who = store.annotator(con, which)
    if who is None:
        raise LexsemError(f"{which!r}: no annotator id or link token of this study")
    if not store.revoke(con, who.id):
        raise LexsemError(f"{who.id}: the link was revoked already")
    return f"annotator {who.id}'s link"


def rotate_admin(con: store.Connection) -> str:
    """A new admin token (committed; the old admin link stops working)."""
    token = new_token()
    with store.write(con):
        store.set_meta(con, "admin_hash", hash_token(token))
    return token


@functools.cache
def _adapter(key: str) -> TypeAdapter[Any]:
    """A validator of the type of `StudySettings`' field `key` (without its bounds)."""
    return TypeAdapter(StudySettings.model_fields[key].annotation)


def load_settings(con: store.Connection) -> StudySettings:
    """The study's settings as stored, their types checked (a hand-edited setting of the wrong
    type is a one-line error naming it) but not the bounds that the values a user gives are
    checked against, so that a study file opens whatever its settings were made with."""
    raw = dict(store.get_meta(con, "settings"))
    fields = StudySettings.model_fields
    unknown = sorted(set(raw) - set(fields))
    missing = sorted(k for k, f in fields.items() if f.is_required() and k not in raw)
    if unknown or missing:
        path = store.file_path(con)
        said = "; ".join(
            f"{what}: {', '.join(keys)}"
            for what, keys in (("unknown", unknown), ("missing", missing))
            if keys
        )
        raise LexsemError(f"{path}: the study's stored settings are not lexsem's ({said})")
    path = store.file_path(con)
    for key, value in raw.items():  # the types, without the bounds
        try:
            raw[key] = _adapter(key).validate_python(value)
        except ValidationError as exc:
            why = exc.errors()[0]["msg"]
            raise LexsemError(
                f"{path}: the study's setting {key} is {value!r}, not usable ({why})"
            ) from None
    return StudySettings.model_construct(**raw)

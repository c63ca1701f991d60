"""The chat requests of a run's `answer` columns (`lexsem.tasks.base.Column`): one conversation
per item and column, built here and only here, so that answers imported from a file
(`lexsem.engine.chat_import`) are stored under exactly the keys the real requests have.

A request is the column's question about the item (`Column.get(item)` -> (image reference,
prompt)) as the last user turn, after `shots` demonstrations (k-shot, SugarCrepe++ Table 14):
other items of the item's subset drawn by `lexsem.tasks.shots.shot_plan` (seeded by
`shot_seed`), each a user turn (its image and the column's prompt about it,
`Column.demo(item)`) answered rightly by an assistant turn. Images are read by content from the
`ImageStore`, each once. `about` names the benchmark, subset, item, task and column (never part
of a request body).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lexsem.errors import DataError
from lexsem.images.refs import ImageError
from lexsem.models.chat import ChatRequest, Turn
from lexsem.tasks.base import Column
from lexsem.tasks.shots import shot_plan

__all__ = [
    "AnswerKey",
    "Requests",
    "answer_requests",
    "image_reader",
    "item_request",
    "no_images",
    "request_about",
]

AnswerKey = tuple[str, str, str, str, str]  # (benchmark, task, column, subset, item id)
Reader = Callable[[str | None], bytes | None]


def image_reader(images: Any) -> Reader:
    """`ref -> bytes` from an `ImageStore`, each image read once (demonstration images are
    shown again and again); None for no reference."""
    cache: dict[str, bytes] = {}

    def read(ref: str | None) -> bytes | None:
        if not ref:
            return None
        if ref not in cache:
            cache[ref] = images.read(ref)
        return cache[ref]

    return read


def _images(image: bytes | None) -> tuple[bytes, ...]:
    return (image,) if image is not None else ()


def request_about(
    benchmark: str, decode: str, task: str, column: str, item: Any, exif_transpose: bool | None
) -> dict[str, str]:
    """What a request is about (`ChatRequest.about`): the benchmark, subset, item, task and
    column, and how a local model decodes its images (the benchmark's decode profile and the
    run's EXIF choice, as for every other image model; an API decodes the bytes itself)."""
    about = {"benchmark": benchmark, "subset": item.subset, "item": str(item.id), "task": task,
             "column": column, "decode": decode}  # fmt: skip
    if exif_transpose is not None:
        about["exif_transpose"] = str(exif_transpose).lower()
    return about


def item_request(
    column: Column,
    item: Any,
    read: Reader,
    demos: Sequence[Any] = (),
    about: dict[str, str] | None = None,
) -> ChatRequest:
    """The conversation asking `column`'s question about `item`, after the demonstrations
    `demos` (other items, answered rightly)."""
    turns: list[Turn] = []
    if demos and column.demo is None:
        raise DataError(f"column {column.name!r} has no demonstrations (shots)")
    for d in demos:
        assert column.demo is not None
        ref, prompt, answer = column.demo(d)
        turns += [Turn("user", prompt, _images(read(ref))), Turn("assistant", answer)]
    ref, prompt = column.get(item)
    turns.append(Turn("user", prompt, _images(read(ref))))
    return ChatRequest(tuple(turns), about=dict(about or {}))


@dataclass
class Requests:
    """The requests of a run's answer columns: `keys[i]` is what `requests[i]` answers;
    `skipped`: the answers of items whose images could not be read (None), by key."""

    keys: list[AnswerKey]
    requests: list[ChatRequest]
    skipped: dict[AnswerKey, str]  # key -> why (an image skipped)


def answer_requests(
    works: Sequence[Any],
    read: Reader,
    *,
    shots: int = 0,
    shot_seed: int = 0,
    skip_bad_images: bool = False,
    exif_transpose: bool | None = None,
) -> Requests:
    """The request of every item of every `answer` column of `works` (see the module doc)."""
    out = Requests([], [], {})
    for w in works:
        plan = shot_plan(w.items, shots, shot_seed) if shots else {}
        for task in w.tasks:
            for col in task.columns:
                if col.kind != "answer":
                    continue
                for it in w.items:
                    key: AnswerKey = (w.benchmark, task.name, col.name, it.subset, str(it.id))
                    about = request_about(w.benchmark, w.decode, task.name, col.name, it,
                                          exif_transpose)  # fmt: skip
                    demos = plan.get(f"{it.subset}/{it.id}", [])
                    try:
                        request = item_request(col, it, read, demos, about)
                    except ImageError as exc:
                        if not (skip_bad_images and exc.skippable):
                            raise exc.for_item(f"{w.benchmark}/{it.subset}#{it.id}") from None
                        out.skipped[key] = exc.reason
                        continue
                    out.keys.append(key)
                    out.requests.append(request)
    return out


def no_images(ref: str | None) -> bytes | None:
    """The reader of a model that answers by item (`by_item`): it is shown no image."""
    return None

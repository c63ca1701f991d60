"""Ask a chat model the multiple-choice prompts about a benchmark's items (every ordering),
through the request store (`lexsem.engine.chat`), and return the answers as `Answer` records
that `score_choices` scores and `lexsem ask` writes as a recorded-answers file.

With `shots=k`, each question comes after `k` demonstrations of other items of its subset
(`lexsem.tasks.shots`): earlier user turns (their image and prompt, options in the same
ordering) answered by the right option. `choice_request` builds the conversation of one (item,
ordering), so an imported answer is stored under the key the real request has."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lexsem.engine.chat import ChatStats, chat_answers
from lexsem.engine.chat_import import ImportRow
from lexsem.errors import DataError
from lexsem.models.backends.openai_chat import ChatRequest, Turn
from lexsem.tasks.choice import PROMPTS, Answer, options_of, orderings
from lexsem.tasks.shots import pick_shots, render_shots

__all__ = ["ask_choices", "choice_request", "image_reader", "import_rows", "shot_plan"]


def image_reader(images: Any) -> Callable[[str | None], bytes | None]:
    """`ref -> bytes` from an `ImageStore`, each image read once (demonstration images are
    shown again and again)."""
    cache: dict[str, bytes] = {}

    def read(ref: str | None) -> bytes | None:
        if not ref:
            return None
        if ref not in cache:
            cache[ref] = images.read(ref)
        return cache[ref]

    return read


def shot_plan(items: Sequence[Any], shots: int, shot_seed: int) -> dict[str, list[Any]]:
    """The demonstrations of each item (by `"subset/id"`), drawn from `items`."""
    pools: dict[str, list[Any]] = {}
    for it in sorted(items, key=lambda it: str(it.id)):
        pools.setdefault(it.subset, []).append(it)
    try:
        return {
            f"{it.subset}/{it.id}": pick_shots(pools[it.subset], it, shots, shot_seed)
            for it in items
        }
    except ValueError as exc:
        raise DataError(f"--shots {shots}: {exc}") from None


def choice_request(
    prompt: str,
    item: Any,
    ordering: str,
    read: Callable[[str | None], bytes | None],
    demos: Sequence[Any] = (),
) -> ChatRequest:
    """The conversation asking `prompt` about `item` with its options in `ordering`, after
    the demonstrations `demos` (other items, answered rightly, options in `ordering`)."""
    p = PROMPTS[prompt]
    texts = item.texts()
    if len(texts) != p.n_options:
        raise DataError(
            f"prompt {prompt!r} lists {p.n_options} options; item {item.subset}/{item.id} "
            f"has {len(texts)} captions"
        )
    turns: list[Turn] = []
    try:
        shown = render_shots(p, demos, ordering)
    except ValueError as exc:
        raise DataError(f"a demonstration for item {item.subset}/{item.id}: {exc}") from None
    for shot in shown:
        image = read(shot.item.image)
        turns.append(Turn("user", shot.prompt, (image,) if image is not None else ()))
        turns.append(Turn("assistant", shot.answer))
    image = read(item.image)
    question = p.render(options_of(item, ordering)[0])
    turns.append(Turn("user", question, (image,) if image is not None else ()))
    return ChatRequest(tuple(turns))


def ask_choices(
    model: Any,
    items: Sequence[Any],
    images: Any,
    prompt: str,
    store: Any,
    *,
    shots: int = 0,
    shot_seed: int = 0,
    **send: Any,
) -> tuple[list[Answer], ChatStats]:
    """The answers of `model` to `prompt` about each item of `items` in every ordering, after
    `shots` demonstrations of other items of its subset (seeded by `shot_seed`); images are
    read from `images` (an `ImageStore`); `send`: options of `chat_answers`."""
    p = PROMPTS[prompt]
    read = image_reader(images)
    plan = shot_plan(items, shots, shot_seed)
    requests: list[ChatRequest] = []
    asked: list[tuple[Any, str]] = []
    for item in items:
        demos = plan[f"{item.subset}/{item.id}"]
        for ordering in orderings(p.n_options):
            requests.append(choice_request(prompt, item, ordering, read, demos))
            asked.append((item, ordering))
    texts, stats = chat_answers(model, requests, store, **send)
    answers = [
        Answer(str(item.id), item.subset, prompt, ordering, text)
        for (item, ordering), text in zip(asked, texts, strict=True)
    ]
    return answers, stats


def import_rows(
    path: str | Path,
    loaded: Any,
    images: Any,
    *,
    prompt: str,
    shots: int = 0,
    shot_seed: int = 0,
) -> list[ImportRow]:
    """The recorded answers of the file at `path` (`lexsem.tasks.recorded`), each with the
    request it answers: the item of the `loaded` benchmark selection it names, asked its
    prompt (`prompt` when the record names none) in its ordering after the demonstrations
    `lexsem ask --shots` would show. DataError naming the file and line for a record about an
    item the selection lacks, or an ordering or prompt the item does not have."""
    from lexsem.tasks.recorded import read_answer_records

    path = Path(path)
    subsets = [s.spec.name for s in loaded.subsets]
    records = read_answer_records(
        path, prompt=prompt, subset=subsets[0] if len(subsets) == 1 else None
    )
    by_key = {f"{it.subset}/{it.id}": it for it in loaded.items}
    plan = shot_plan(loaded.items, shots, shot_seed)
    read = image_reader(images)
    rows = []
    for where, a in records:
        key = f"{a.subset}/{a.item_id}"
        item = by_key.get(key)
        if item is None:
            raise DataError(
                f"{path}, {where}: item {key} is not in the benchmark selection "
                f"({', '.join(subsets)})"
            )
        n_options = PROMPTS[a.prompt].n_options
        if a.ordering not in orderings(n_options) or len(item.texts()) != n_options:
            raise DataError(
                f"{path}, {where}: item {key} has {len(item.texts())} captions; prompt "
                f"{a.prompt!r} with ordering {a.ordering!r} does not fit it"
            )
        request = choice_request(a.prompt, item, a.ordering, read, plan[key])
        rows.append(ImportRow(where, f"item {key}, {a.prompt}, {a.ordering}", request, a.text))
    return rows

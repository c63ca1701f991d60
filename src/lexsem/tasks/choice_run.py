"""Ask a chat model the multiple-choice prompts about a benchmark's items (every ordering),
through the request store (`lexsem.engine.chat`), and return the answers as `Answer` records
that `score_choices` scores and `lexsem ask` writes as a recorded-answers file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lexsem.engine.chat import ChatStats, chat_answers
from lexsem.errors import DataError
from lexsem.tasks.choice import PROMPTS, Answer, options_of, orderings

__all__ = ["ask_choices"]


def ask_choices(
    model: Any,
    items: Sequence[Any],
    images: Any,
    prompt: str,
    store: Any,
    **send: Any,
) -> tuple[list[Answer], ChatStats]:
    """The answers of `model` to `prompt` about each item of `items` in every ordering; the
    item's image is read from `images` (an `ImageStore`); `send`: options of `chat_answers`."""
    p = PROMPTS[prompt]
    requests: list[tuple[str, bytes | None]] = []
    asked: list[tuple[Any, str]] = []
    for item in items:
        texts = item.texts()
        if len(texts) != p.n_options:
            raise DataError(
                f"prompt {prompt!r} lists {p.n_options} options; item {item.subset}/{item.id} "
                f"has {len(texts)} captions"
            )
        data = images.read(item.image) if item.image else None
        for ordering in orderings(p.n_options):
            requests.append((p.render(options_of(item, ordering)[0]), data))
            asked.append((item, ordering))
    texts, stats = chat_answers(model, requests, store, **send)
    answers = [
        Answer(str(item.id), item.subset, prompt, ordering, text)
        for (item, ordering), text in zip(asked, texts, strict=True)
    ]
    return answers, stats

"""k-shot demonstrations for the multiple-choice prompts (few-shot prompting of GPT-4o on the
triplets: SugarCrepe++, Table 14): before the question, `k` other items of the same subset are
shown as earlier turns — the user turn their image and the same prompt with their options (in
the question's ordering), the assistant turn the right answer, as the prompt asks for it
(`(2)`).

Pure functions over items, so the demonstrations are tested on hand-made items:

- `pick_shots(pool, item, k, seed)`: `k` items drawn without replacement from the items of
  `pool` in `item`'s subset, never `item` itself (nor another item with its id), by a random
  generator seeded with (`seed`, subset, item id): the same items for every ordering of one
  item, for every run with the same seed, whatever the order of `pool` or which other subsets
  are selected. The paper does not say how its demonstrations were chosen; these are random.
- `right_answer(prompt, item, ordering)`: the option a correct answer names (the negative's
  position for the "does not match" prompts, the positive's for `sc_gpt4v`), written with
  `answer_format` (`({n})`, the marker the prompts ask for).
- `render_shots(prompt, demos, ordering)`: the (prompt text, right answer) of each
  demonstration, options in `ordering`;
- `shot_plan(items, k, seed)`: the demonstrations of every item (by `"subset/id"`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lexsem.errors import DataError
from lexsem.tasks.choice import PROMPTS, ChoicePrompt, options_of

__all__ = ["ANSWER_FORMAT", "Shot", "pick_shots", "render_shots", "right_answer", "shot_plan"]

ANSWER_FORMAT = "({n})"


@dataclass(frozen=True)
class Shot:
    """One demonstration: the item shown (its image), the prompt about it and the answer."""

    item: Any
    prompt: str
    answer: str


def _prompt(prompt: str | ChoicePrompt) -> ChoicePrompt:
    return PROMPTS[prompt] if isinstance(prompt, str) else prompt


def pick_shots(pool: Iterable[Any], item: Any, k: int, seed: int) -> list[Any]:
    """`k` demonstration items for `item` (see the module doc); ValueError when its subset has
    fewer than `k` other items."""
    if k < 0:
        raise ValueError(f"the number of shots must be 0 or more, not {k}")
    if k == 0:
        return []
    others = sorted(
        (it for it in pool if it.subset == item.subset and str(it.id) != str(item.id)),
        key=lambda it: str(it.id),
    )
    if len(others) < k:
        raise ValueError(
            f"item {item.subset}/{item.id}: {k} shots need {k} other items of subset "
            f"{item.subset!r}, which has {len(others)}"
        )
    rng = random.Random(f"{seed}\x00{item.subset}\x00{item.id}")
    return rng.sample(others, k)


def right_answer(
    prompt: str | ChoicePrompt, item: Any, ordering: str, answer_format: str = ANSWER_FORMAT
) -> str:
    """The right answer to `prompt` about `item` with its options in `ordering`."""
    p = _prompt(prompt)
    texts, neg, pos = options_of(item, ordering)
    if len(texts) != p.n_options:
        raise ValueError(
            f"item {item.subset}/{item.id}: prompt {p.name!r} lists {p.n_options} options, the "
            f"item has {len(texts)} captions"
        )
    return answer_format.format(n=neg if p.target == "negative" else pos)


def render_shots(
    prompt: str | ChoicePrompt,
    demos: Sequence[Any],
    ordering: str,
    answer_format: str = ANSWER_FORMAT,
) -> list[Shot]:
    """Each demonstration's prompt (options in `ordering`) and right answer."""
    p = _prompt(prompt)
    return [
        Shot(d, p.render(options_of(d, ordering)[0]), right_answer(p, d, ordering, answer_format))
        for d in demos
    ]


def shot_plan(items: Sequence[Any], shots: int, shot_seed: int) -> dict[str, list[Any]]:
    """The demonstrations of each item (by `"subset/id"`), drawn from `items`; DataError naming
    `--shots` when a subset has too few items."""
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
